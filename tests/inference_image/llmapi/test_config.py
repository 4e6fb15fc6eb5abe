"""config.pbtxt of the ``tensorrt_llm`` model: the contract's tensors, Triton's settings, the stop list."""

from __future__ import annotations

import json
import re

from inference_platform.inference_image.llmapi import contract
from inference_platform.inference_image.llmapi.repository import render_config
from inference_platform.settings import stack_files

_ENTRY = re.compile(r'name: "(\w+)"\n\s+data_type: (\w+)\n\s+dims: \[ ([^\]]+) \]\n(\s+optional: true\n)?')


def _section(text: str, kind: str) -> list[tuple[str, str, str, bool]]:
    start = text.index(f"{kind} [")
    body = text[start : text.index("\n]\n", start)]
    return [(n, t, d, bool(o)) for n, t, d, o in _ENTRY.findall(body + "\n")]


def _parameters(text: str) -> dict[str, str]:
    return {k: json.loads(v) for k, v in re.findall(r'key: "(\w+)"\n\s+value: \{ string_value: (".*") \}', text)}


def test_the_rendered_config_declares_exactly_the_contract():
    text = render_config(stack_files.load("dev").serving)
    assert text.startswith('name: "tensorrt_llm"\nbackend: "python"\nmax_batch_size: 0\n')
    assert "decoupled: true" in text and "kind: KIND_CPU" in text
    expected_inputs = [(t.name, t.data_type, ", ".join(map(str, t.dims)), t.optional) for t in contract.INPUTS]
    assert _section(text, "input") == expected_inputs
    assert [name for name, *_ in _section(text, "output")] == [t.name for t in contract.OUTPUTS]
    # Upstream's llmapi names wherever upstream has the tensor (contract.SOURCE).
    upstream = {"text_input", "streaming", "sampling_param_max_tokens", "sampling_param_stop", "stop"}
    assert upstream <= {t.name for t in contract.INPUTS}
    assert not any(t.optional for t in contract.OUTPUTS) and contract.INPUTS[0].optional is False


def test_the_model_parameters_carry_the_catalogs_stop_list():
    params = _parameters(render_config(stack_files.load("prod").serving))
    assert params == {
        "llm_config": "model.yaml",
        "stop_words": json.dumps(["<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"]),
        "cancellation_check_period_ms": "100",
    }
    assert json.loads(params["stop_words"]) == ["<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"]


def test_a_non_streaming_stack_is_not_decoupled_and_buckets_are_optional():
    serving = stack_files.load("dev").serving.model_copy(update={"streaming": False})
    text = render_config(serving)
    assert "decoupled: false" in text and "model_metrics" not in text
    timed = render_config(serving, ttft_buckets_ms=(100.0, 500.0))
    assert "model_metrics" in timed and "buckets: [ 100, 500 ]" in timed
