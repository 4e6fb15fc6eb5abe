"""TEST DOUBLE: ``SamplingParams`` and ``GuidedDecodingParams`` with the LLM API's field names and defaults.

Names, defaults and keyword-only construction as in TensorRT-LLM's ``tensorrt_llm/sampling_params.py``
(tests/inference_image/cpu_llm_api/test_upstream_surface.py pins them): max_tokens 32, exclude_input_from_output
true, add_special_tokens true, greedy unless temperature > 0, top_p < 1 or top_k > 1; GuidedDecodingParams takes
one of json, regex, grammar, json_object, structural_tag. A keyword the real class does not have is a TypeError.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(kw_only=True)
class GuidedDecodingParams:
    json: str | dict[str, Any] | None = None
    regex: str | None = None
    grammar: str | None = None
    json_object: bool = False
    structural_tag: str | None = None

    def __post_init__(self) -> None:
        chosen = [n for n in ("json", "regex", "grammar", "structural_tag") if getattr(self, n) is not None]
        chosen += ["json_object"] if self.json_object else []
        if len(chosen) > 1:
            raise ValueError(f"only one guide can be used for a request, got {chosen}")


@dataclass(kw_only=True)
class SamplingParams:
    max_tokens: int = 32
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    best_of: int | None = None
    n: int = 1
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    include_stop_str_in_output: bool = False
    end_id: int | None = None
    pad_id: int | None = None
    ignore_eos: bool = False
    exclude_input_from_output: bool = True
    return_perf_metrics: bool = False
    guided_decoding: GuidedDecodingParams | None = None
    add_special_tokens: bool = True
    skip_special_tokens: bool = True
    detokenize: bool = True
    logprobs: int | None = None

    def stop_strings(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else [str(s) for s in self.stop]

    def samples(self) -> bool:
        """Whether any sampling knob is set; the LLM API decodes greedily otherwise."""
        return bool(
            (self.temperature is not None and self.temperature > 0)
            or (self.top_k is not None and self.top_k > 1)
            or (self.top_p is not None and self.top_p < 1)
        )
