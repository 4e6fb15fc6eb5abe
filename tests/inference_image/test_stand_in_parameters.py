"""The CPU stand-in reads the production tensorrt_llm parameters as the C++ backend would, and checks them."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from inference_platform.inference_image.repository import render_repository
from inference_platform.inference_image.testing.cpu_llm import trtllm_parameters
from inference_platform.inference_image.testing.cpu_llm.options import StandIn
from inference_platform.inference_image.testing.cpu_llm.trtllm_parameters import ParameterError, read
from tritonclient.grpc import model_config_pb2

ENGINE = Path("/models/engine")
TOKENIZER = Path("/models/tokenizer")


def _production(serving, tmp_path: Path) -> dict[str, str]:
    render_repository(serving, tmp_path / "repo", engine_dir=ENGINE, tokenizer_dir=TOKENIZER, stand_in=StandIn())
    text = (tmp_path / "repo" / "tensorrt_llm" / "config.pbtxt").read_text()
    config = text_format.Parse(text, model_config_pb2.ModelConfig())
    return {key: value.string_value for key, value in config.parameters.items()}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_stacks_production_parameters_pass(serving, tmp_path, stack):
    params = read("tensorrt_llm", _production(serving[stack], tmp_path))
    assert params.engine_dir == ENGINE and params.tokenizer_dir == TOKENIZER
    assert params.max_beam_width == serving[stack].max_beam_width
    assert params.exclude_input_in_output is serving[stack].exclude_input_in_output
    assert params.guided_decoding_backend == (
        "xgrammar" if serving[stack].guided_decoding.backend != "none" else "none"
    )


def test_missing_and_misspelt_keys_fail_together(serving, tmp_path):
    raw = _production(serving["dev"], tmp_path)
    raw["tokenizer_dri"] = raw.pop("tokenizer_dir")
    del raw["guided_decoding_backend"]
    with pytest.raises(ParameterError) as err:
        read("tensorrt_llm", raw)
    message = str(err.value)
    assert "unknown parameter 'tokenizer_dri'" in message
    assert "missing parameter 'tokenizer_dir'" in message and "missing parameter 'guided_decoding_backend'" in message


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("enable_kv_cache_reuse", "ture", "not one of True"),
        ("batch_scheduler_policy", "max_utilisation", "not one of max_utilization"),
        ("gpt_model_type", "", "is empty"),
        ("kv_cache_free_gpu_mem_fraction", "1.5", "outside 0-1"),
        ("max_tokens_in_paged_kv_cache", "lots", "not a non-negative integer"),
        ("participant_ids", "0,,1", "comma-separated integers"),
        ("medusa_choices", "[[0]]", "expected {i, j}"),
        ("gpt_model_path", "relative/engine", "not an absolute path"),
        ("decoding_mode", "medusa2", "not one of top_k"),
    ],
)
def test_values_the_backend_would_silently_replace_are_refused(serving, tmp_path, key, value, expected):
    raw = _production(serving["dev"], tmp_path)
    raw[key] = value
    with pytest.raises(ParameterError, match=expected):
        read("tensorrt_llm", raw)


def test_combinations_the_backend_throws_on_are_refused(serving, tmp_path):
    raw = _production(serving["dev"], tmp_path)
    raw["decoding_mode"] = "lookahead"
    with pytest.raises(ParameterError, match="lookahead"):
        read("tensorrt_llm", raw)
    raw = _production(serving["dev"], tmp_path / "guided")
    raw["guided_decoding_backend"], raw["xgrammar_tokenizer_info_path"] = "xgrammar", ""
    with pytest.raises(ParameterError, match="xgrammar_tokenizer_info_path is empty"):
        read("tensorrt_llm", raw)


def test_every_key_has_a_rule():
    from inference_platform.inference_image.model_repository.nvidia_keys import TENSORRT_LLM

    ruled = (
        trtllm_parameters.INTEGER
        | trtllm_parameters.FRACTION
        | trtllm_parameters.FLOAT
        | trtllm_parameters.BOOLEAN
        | set(trtllm_parameters.ENUM)
        | trtllm_parameters.INT_LISTS
        | trtllm_parameters.TREES
        | trtllm_parameters.PATHS
    )
    assert set(TENSORRT_LLM) == ruled
