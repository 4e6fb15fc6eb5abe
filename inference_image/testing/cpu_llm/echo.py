"""TEST DOUBLE: the stand-in's "engine" — which tokens it emits for a request, and refusals.

Pure functions, so the behaviour the real-server tests rely on is also tested directly.
"""

from __future__ import annotations

from collections.abc import Iterator

from inference_platform.inference_image.runtime.generation import completes_word
from inference_platform.inference_image.runtime.llm_request import LlmRequest, RequestError
from inference_platform.inference_image.runtime.tokenizer import Tokenizer
from inference_platform.inference_image.testing.cpu_llm.guided import GuideError, satisfying_text


def refusal(request: LlmRequest, *, max_beam_width: int, guided_backend: str) -> str | None:
    """Why the stand-in (like an engine built without the feature) refuses ``request``, or None."""
    if request.beam_width > max_beam_width:
        return f"beam_width {request.beam_width} exceeds the engine's max_beam_width {max_beam_width}"
    if request.beam_width > 1:
        return "the CPU stand-in samples with beam width 1 only"
    if request.return_context_logits or request.return_generation_logits:
        return "the CPU stand-in has no logits to return (engine built without gather_*_logits)"
    if any(request.embedding_bias):
        return "the CPU stand-in has no logits to bias (embedding_bias)"
    if request.guide_type is not None and guided_backend == "none":
        return "guided decoding is not enabled on this model (guided_decoding_backend is none)"
    return None


def body_tokens(request: LlmRequest, tokenizer: Tokenizer) -> tuple[int, ...]:
    """What one pass of the echo emits: the prompt, or a text that satisfies the request's guide."""
    if request.guide_type is None:
        return request.input_ids
    prompt = tokenizer.decode(request.input_ids, skip_special_tokens=True)
    try:
        text = satisfying_text(request.guide_type, request.guide, prompt)
    except GuideError as err:
        raise RequestError(str(err)) from None
    return tuple(tokenizer.encode(text, add_special_tokens=False))


def echo(request: LlmRequest, body: tuple[int, ...]) -> Iterator[int]:
    """The body, then ``end_id`` (when set), over and over; bad words are never completed."""
    emitted: list[int] = []
    while True:
        for token in body:
            if completes_word(emitted, token, request.bad_words):
                continue
            emitted.append(token)
            yield token
        if request.end_id is not None:
            yield request.end_id
