"""Every request field the server knows, and what it does with each: mapped, accepted and ignored, or refused.

The OpenAI API's fields plus the extensions vLLM and trtllm-serve accept (trtllm-serve's ``ChatCompletionRequest`` /
``CompletionRequest``, shared/facts/engine.md section 4). ``mapped`` fields reach the engine (the Triton input named)
or shape the response; ``ignored`` ones are accepted, have no effect and are logged (once per request, with the
request id) as vLLM does with fields it does not use; ``refused`` ones get OpenAI's 400 naming the field when set
to anything but their neutral value. A field no row names is ignored and logged too (vLLM's behaviour: clients send
fields of newer API versions). docs/serving.md shows this table (``markdown()``; a test keeps the page equal).

The Neuron runtime refuses more (``NEURON_REFUSED``): its engine has no guided decoding, one sequence per request,
no logprobs or logit bias (inference_image/runtime/text_contract.py refuses them too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Disposition = Literal["mapped", "ignored", "refused"]
CHAT, COMPLETIONS = "chat", "completions"
BOTH = (CHAT, COMPLETIONS)


@dataclass(frozen=True)
class Field:
    name: str
    endpoints: tuple[str, ...]
    disposition: Disposition
    how: str
    """Where a mapped field goes, or why a field is ignored or refused."""


SEED_NOT_HONOURED = (
    "TensorRT-LLM 1.2.1's default sampler (TorchSampler) draws from one generator seeded 42 for the whole engine; "
    "per-request seeds came after 1.2.1. Sampling is not repeatable; OpenAI documents seed as best effort too"
)

FIELDS: Final[tuple[Field, ...]] = (
    Field("model", BOTH, "mapped", "must be the served model id (else 404 model_not_found)"),
    Field("messages", (CHAT,), "mapped", "the model's chat template; text parts only (images, audio: 400)"),
    Field("prompt", (COMPLETIONS,), "mapped", "one string (a list of one string); token ids and batches: 400"),
    Field("max_tokens", BOTH, "mapped", "sampling_param_max_tokens; a JSON integer >= 1"),
    Field("max_completion_tokens", (CHAT,), "mapped", "sampling_param_max_tokens (wins over max_tokens)"),
    Field("temperature", BOTH, "mapped", "sampling_param_temperature (0-2)"),
    Field("top_p", BOTH, "mapped", "sampling_param_top_p (0 < p <= 1)"),
    Field("top_k", BOTH, "mapped", "sampling_param_top_k (vLLM/trtllm-serve extension; 0 or -1: no limit)"),
    Field("min_tokens", BOTH, "mapped", "sampling_param_min_tokens (the end tokens are masked until then)"),
    Field("repetition_penalty", BOTH, "mapped", "sampling_param_repetition_penalty (> 0)"),
    Field("frequency_penalty", BOTH, "mapped", "sampling_param_frequency_penalty (-2 to 2)"),
    Field("presence_penalty", BOTH, "mapped", "sampling_param_presence_penalty (-2 to 2)"),
    Field("stop", BOTH, "mapped", "sampling_param_stop (up to 4 strings)"),
    Field("stop_token_ids", BOTH, "mapped", "sampling_param_stop_token_ids (up to 64 ids)"),
    Field("include_stop_str_in_output", BOTH, "mapped", "sampling_param_include_stop_str_in_output"),
    Field("ignore_eos", BOTH, "mapped", "sampling_param_ignore_eos (generate to max_tokens)"),
    Field("skip_special_tokens", BOTH, "mapped", "sampling_param_skip_special_tokens"),
    Field(
        "n", BOTH, "mapped", "sampling_param_n, one choice each (1-16; sampling only: n > 1 at temperature 0 is 400)"
    ),
    Field("best_of", BOTH, "mapped", "sampling_param_best_of (>= n, <= 16; not with stream)"),
    Field(
        "logprobs", BOTH, "mapped", "chat: true/false; completions: 0-20; sampling_param_logprobs (raw model values)"
    ),
    Field(
        "top_logprobs", (CHAT,), "mapped", "0-20, needs logprobs true; sampling_param_logprobs = max(top_logprobs, 1)"
    ),
    Field("logit_bias", BOTH, "mapped", "sampling_param_logit_bias -> SamplingParams.embedding_bias (-100 to 100)"),
    Field("stream", BOTH, "mapped", "server-sent events; the engine always streams"),
    Field(
        "stream_options",
        BOTH,
        "mapped",
        "include_usage (a last chunk with usage), continuous_usage_stats (usage "
        "in every chunk, with include_usage); only with stream",
    ),
    Field(
        "response_format",
        (CHAT,),
        "mapped",
        "json_object / json_schema -> guided decoding, checked against serving.guidedDecoding.limits; text: none",
    ),
    Field("tools", (CHAT,), "mapped", "function tools, rendered by the chat template (at most limits.tools)"),
    Field(
        "tool_choice",
        (CHAT,),
        "mapped",
        "none | auto (parsed from the output) | required / a named function (guided JSON of the tool's parameters)",
    ),
    Field("parallel_tool_calls", (CHAT,), "mapped", "true or false; Llama 3.1 calls one tool per turn"),
    Field("seed", BOTH, "ignored", SEED_NOT_HONOURED),
    Field("user", BOTH, "ignored", "the edge's client id labels metrics and logs instead"),
    Field("metadata", (CHAT,), "ignored", "nothing is stored"),
    Field("service_tier", BOTH, "ignored", "one tier per stack (docs/edge.md rate limits)"),
    Field("min_p", BOTH, "ignored", "TorchSampler's support at 1.2.1 was not established (shared/facts/engine.md)"),
    Field("reasoning_effort", (CHAT,), "ignored", "the served models are not reasoning models"),
    Field("spaces_between_special_tokens", BOTH, "ignored", "the LLM API's default (true) applies"),
    Field("add_generation_prompt", (CHAT,), "ignored", "always true: the server answers as the assistant"),
    Field("chat_template_kwargs", (CHAT,), "ignored", "the model's own template renders with its defaults"),
    Field("cache_salt", BOTH, "ignored", "prefix reuse is per replica; no salting"),
    Field("priority", BOTH, "ignored", "the engine schedules first come, first served"),
    Field("store", (CHAT,), "refused", "no completion is stored (store: false is accepted)"),
    Field("echo", BOTH, "refused", "the prompt is never echoed"),
    Field("suffix", (COMPLETIONS,), "refused", "no fill-in-the-middle"),
    Field("use_beam_search", BOTH, "refused", "beam search is not served (one sequence per sampling slot)"),
    Field("prompt_logprobs", BOTH, "refused", "prompt logprobs need context logits, which the engine is not asked for"),
    Field("functions", (CHAT,), "refused", "the legacy function-calling fields: use tools"),
    Field("function_call", (CHAT,), "refused", "the legacy function-calling fields: use tool_choice"),
    Field("chat_template", (CHAT,), "refused", "a client-supplied template: the model's own renders"),
    Field("audio", (CHAT,), "refused", "text models only"),
    Field("modalities", (CHAT,), "refused", 'text only (["text"] is accepted)'),
    Field("prediction", (CHAT,), "refused", "no predicted outputs"),
    Field("web_search_options", (CHAT,), "refused", "no web search"),
    Field("guided_json", BOTH, "refused", "vLLM's guided_* extensions: use response_format"),
    Field("guided_regex", BOTH, "refused", "vLLM's guided_* extensions: use response_format"),
    Field("guided_choice", BOTH, "refused", "vLLM's guided_* extensions: use response_format"),
    Field("guided_grammar", BOTH, "refused", "vLLM's guided_* extensions: use response_format"),
    Field("structured_outputs", BOTH, "refused", "vLLM's extension: use response_format"),
    Field("truncate_prompt_tokens", BOTH, "refused", "prompts are never truncated: a prompt over the limit is 400"),
)

NEURON_REFUSED: Final = frozenset(
    {
        "response_format",
        "tools",
        "n",
        "best_of",
        "logprobs",
        "top_logprobs",
        "logit_bias",
        "ignore_eos",
        "include_stop_str_in_output",
    }
)
"""Fields the Neuron runtime refuses when set (text_contract.REFUSED_ON_NEURON and structured output)."""

BY_NAME: Final = {f.name: f for f in FIELDS}


def disposition(name: str, endpoint: str) -> Disposition:
    field = BY_NAME.get(name)
    if field is None or endpoint not in field.endpoints:
        return "ignored"
    return field.disposition


def markdown() -> str:
    """The table docs/serving.md shows."""
    rows = ["| field | endpoints | TensorRT-LLM | Neuron | what happens |", "|---|---|---|---|---|"]
    for f in FIELDS:
        neuron = "refused" if f.name in NEURON_REFUSED else f.disposition
        where = ", ".join(f.endpoints)
        rows.append(f"| `{f.name}` | {where} | {f.disposition} | {neuron} | {f.how} |")
    return "\n".join(rows)
