"""The stand-in's LLM API names are TensorRT-LLM's: every keyword it takes exists upstream with the same default.

Read from NVIDIA/TensorRT-LLM ``tensorrt_llm/sampling_params.py`` at a98a9061d72f6fd39f5d055ebdd2c6878a100e2c
(search-index copy; the LLM-API line the pinned 26.07 image ships, h4a's release.py): both classes are
``@dataclass(slots=True, kw_only=True)``; the defaults below are upstream's.
"""

from __future__ import annotations

import dataclasses

from inference_platform.inference_image.testing.cpu_llm_api import GuidedDecodingParams, SamplingParams

SOURCE = "NVIDIA/TensorRT-LLM tensorrt_llm/sampling_params.py @ a98a9061d72f6fd39f5d055ebdd2c6878a100e2c"
UPSTREAM_SAMPLING_DEFAULTS = {
    "end_id": None,
    "pad_id": None,
    "max_tokens": 32,
    "stop": None,
    "stop_token_ids": None,
    "include_stop_str_in_output": False,
    "n": 1,
    "best_of": None,
    "use_beam_search": False,
    "min_tokens": None,
    "repetition_penalty": None,
    "min_p": None,
    "embedding_bias": None,
    "top_k": None,
    "top_p": None,
    "seed": None,
    "temperature": None,
    "presence_penalty": None,
    "frequency_penalty": None,
    "logprobs": None,
    "exclude_input_from_output": True,
    "return_perf_metrics": False,
    "guided_decoding": None,
    "ignore_eos": False,
    "detokenize": True,
    "add_special_tokens": True,
    "skip_special_tokens": True,
}
"""Upstream's fields the stand-in implements, with upstream's defaults (its docstring and field list)."""
UPSTREAM_GUIDE_DEFAULTS = {"json": None, "regex": None, "grammar": None, "json_object": False, "structural_tag": None}


def _defaults(cls) -> dict:
    return {f.name: f.default for f in dataclasses.fields(cls)}


def test_sampling_params_take_upstreams_keywords_with_upstreams_defaults():
    assert _defaults(SamplingParams) == UPSTREAM_SAMPLING_DEFAULTS, SOURCE
    assert all(f.kw_only for f in dataclasses.fields(SamplingParams))


def test_guided_decoding_params_take_upstreams_keywords_with_upstreams_defaults():
    assert _defaults(GuidedDecodingParams) == UPSTREAM_GUIDE_DEFAULTS, SOURCE
    assert all(f.kw_only for f in dataclasses.fields(GuidedDecodingParams))
