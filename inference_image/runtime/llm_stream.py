"""Call the LLM step through business logic scripting and turn its responses into text responses.

Shared by ``tensorrt_llm_bls`` and the ensemble's ``postprocessing``: both see every response of one
request, so streamed text is detokenized incrementally (``IncrementalText``) and a character whose
UTF-8 bytes span tokens is never split. Runs inside a Triton Python model: ``pb`` is its
``triton_python_backend_utils`` module, passed in so this module imports without Triton.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from inference_image.runtime.detokenize import IncrementalText
from inference_image.runtime.tokenizer import Tokenizer

# LLM step outputs the client contracts return as they are (ensemble and BLS).
LLM_OUTPUTS = (
    "cum_log_probs",
    "output_log_probs",
    "context_logits",
    "generation_logits",
    "batch_index",
    "sequence_index",
    "kv_cache_alloc_new_blocks",
    "kv_cache_reused_blocks",
    "kv_cache_alloc_total_blocks",
    "arrival_time_ns",
    "first_scheduled_time_ns",
    "first_token_time_ns",
    "last_token_time_ns",
    "acceptance_rate",
    "total_accepted_draft_tokens",
    "total_draft_tokens",
)


class LlmStream:
    """One LLM model's requests, detokenized; ``text_name`` is the output tensor carrying the text."""

    def __init__(
        self, pb: Any, *, llm: str, tokenizer: Tokenizer, skip_special_tokens: bool, decoupled: bool, text_name: str
    ) -> None:
        self._pb = pb
        self._llm = llm
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self._decoupled = decoupled
        self._text_name = text_name

    def responses(
        self, llm_inputs: Sequence[Any], *, streaming: bool, cancelled: Callable[[], bool] = lambda: False
    ) -> Iterator[Any]:
        """Text responses for one request to the LLM step (one per streamed LLM response, else one)."""
        pb = self._pb
        if streaming and not self._decoupled:
            raise ValueError("stream=true needs the decoupled transaction policy (serving.streaming: true)")
        request = pb.InferenceRequest(
            model_name=self._llm,
            requested_output_names=["output_ids", "sequence_length", *LLM_OUTPUTS],
            inputs=list(llm_inputs),
        )
        text = IncrementalText(self._tokenizer, skip_special_tokens=self._skip)
        llm_responses = request.exec(decoupled=True) if self._decoupled else [request.exec()]
        for llm_response in llm_responses:
            if cancelled():
                cancel = getattr(llm_responses, "cancel", None)
                if cancel is not None:
                    cancel()
                return
            if llm_response.has_error():
                raise RuntimeError(llm_response.error().message())
            outputs = {t.name(): t.as_numpy() for t in llm_response.output_tensors()}
            if "output_ids" not in outputs:
                continue  # the flag-only end of a stream
            length = int(outputs["sequence_length"].reshape(-1)[0])
            ids = outputs["output_ids"].reshape(-1)[:length].tolist()
            if streaming:
                yield self._response(text.add(ids), outputs)
            else:
                yield self._response(self._tokenizer.decode(ids, skip_special_tokens=self._skip), outputs)
        if streaming:
            rest = text.flush()
            if rest:
                yield self._response(rest, {})

    def serve(self, request: Any, sender: Any, llm_inputs: Callable[[], tuple[Sequence[Any], bool]]) -> list[Any]:
        """Answer one Triton request: stream to ``sender`` (decoupled) or return the one response.

        ``llm_inputs`` builds (inputs, streaming) and may raise; every failure becomes the client's
        error response and a stream is always closed, so no client waits forever.
        """
        pb = self._pb
        out = []
        try:
            inputs, streaming = llm_inputs()
            cancelled = sender.is_cancelled if sender is not None else (lambda: False)
            for response in self.responses(inputs, streaming=streaming, cancelled=cancelled):
                if sender is not None:
                    sender.send(response)
                else:
                    out.append(response)
        except Exception as err:  # every failure becomes the client's error response
            error = pb.InferenceResponse(output_tensors=[], error=pb.TritonError(str(err)))
            if sender is None:
                out.append(error)
            else:
                sender.send(error)
        if sender is not None:
            sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return out

    def _response(self, text: str, outputs: dict[str, Any]) -> Any:
        pb = self._pb
        tensors = [pb.Tensor(self._text_name, np.array([[text.encode("utf-8")]], dtype=object))]
        tensors += [pb.Tensor(name, outputs[name]) for name in LLM_OUTPUTS if name in outputs]
        return pb.InferenceResponse(output_tensors=tensors)
