"""TEST DOUBLE: ``SamplingParams`` and ``GuidedDecodingParams`` with the LLM API's field names, defaults and checks.

Names, defaults and keyword-only construction as in TensorRT-LLM's ``tensorrt_llm/sampling_params.py``
(tests/inference_image/cpu_llm_api/test_upstream_surface.py pins them). ``__post_init__`` and ``_validate`` copy
upstream's @ a98a9061 (tests/inference_image/cpu_llm_api/test_upstream_behaviour.py): ``best_of`` defaults to ``n``;
``0 <= top_p <= 1``, ``top_k >= 0``, ``temperature >= 0``, ``best_of >= n``; ``best_of > 1`` under greedy decoding
(none of temperature/top_p/top_k set, or top_k 1, top_p 0, temperature 0) raises unless the environment sets
``TLLM_ALLOW_N_GREEDY_DECODING``; ``logprobs`` is coerced with ``logprobs and int(logprobs)`` (so 0 means none);
only one guide per request. A keyword the real class does not have is a TypeError.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

ALLOW_N_GREEDY_ENV = "TLLM_ALLOW_N_GREEDY_DECODING"


@dataclass(kw_only=True)
class GuidedDecodingParams:
    json: str | dict[str, Any] | None = None
    regex: str | None = None
    grammar: str | None = None
    json_object: bool = False
    structural_tag: str | None = None

    def __post_init__(self) -> None:
        self._validate()

    def _validate(self) -> None:
        chosen = sum(bool(getattr(self, f.name)) for f in fields(self))
        if chosen > 1:
            raise ValueError(f"Only one guide can be used for a request, but got {chosen}.")


@dataclass(kw_only=True)
class SamplingParams:
    max_tokens: int = 32
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    seed: int | None = None
    best_of: int | None = None
    n: int = 1
    use_beam_search: bool = False
    min_tokens: int | None = None
    repetition_penalty: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    embedding_bias: Any = None
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    include_stop_str_in_output: bool = False
    end_id: int | None = None
    pad_id: int | None = None
    ignore_eos: bool = False
    logprobs: int | None = None
    exclude_input_from_output: bool = True
    return_perf_metrics: bool = False
    guided_decoding: GuidedDecodingParams | None = None
    add_special_tokens: bool = True
    skip_special_tokens: bool = True
    detokenize: bool = True

    def __post_init__(self) -> None:
        if self.pad_id is None:
            self.pad_id = self.end_id
        self.best_of = self.best_of or self.n
        self._validate()

    def _validate(self) -> None:
        if self.top_p is not None and (self.top_p < 0 or self.top_p > 1):
            raise ValueError(f"require 0 <= top_p <= 1, got top_p={self.top_p}")
        if self.top_k is not None and self.top_k < 0:
            raise ValueError(f"require top_k >= 0, got top_k={self.top_k}")
        if self.temperature is not None and self.temperature < 0:
            raise ValueError(f"require temperature >= 0, got temperature={self.temperature}")
        if self.best_of is not None and self.best_of < self.n:
            raise ValueError(f"best_of ({self.best_of}) cannot be less than n ({self.n})")
        if (
            self.best_of is not None
            and self.best_of > 1
            and self._greedy_decoding
            and not os.environ.get(ALLOW_N_GREEDY_ENV, None)
        ):
            raise ValueError(
                "Greedy decoding in the LLM API does not allow multiple returns. Please set to best_of=1, got "
                f"best_of={self.best_of}. Please set to best_of=1 or set an environment variable "
                f"{ALLOW_N_GREEDY_ENV}=1 to allow best_of > 1 under the greedy decoding."
            )
        if self.guided_decoding is not None:
            self.guided_decoding._validate()
        # upstream: "correct types as users might pass in logprob=True for Top-1 logprobs"
        self.logprobs = self.logprobs and int(self.logprobs)

    @staticmethod
    def params_imply_greedy_decoding(*, temperature: float | None, top_p: float | None, top_k: int | None) -> bool:
        return (
            (temperature is None and top_p is None and top_k is None) or top_k == 1 or top_p == 0.0 or temperature == 0
        )

    @property
    def _greedy_decoding(self) -> bool:
        return not self.use_beam_search and self.params_imply_greedy_decoding(
            temperature=self.temperature, top_p=self.top_p, top_k=self.top_k
        )

    def stop_strings(self) -> list[str]:
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else [str(s) for s in self.stop]

    def samples(self) -> bool:
        """Whether decoding samples (the stand-in shuffles its echo then); greedy otherwise."""
        return not self._greedy_decoding
