"""Model metadata: validated all at once against the platform's accelerator catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference_platform.artifacts.errors import InvalidInputError
from inference_platform.artifacts.metadata import ACCELERATORS, ModelMetadata, load_metadata

GOOD = {
    "architecture": "LlamaForCausalLM",
    "precision": "fp8",
    "accelerator": "nvidia-h100",
    "builder": "tensorrt-llm",
    "builder_version": "0.17.0",
}


def test_architecture_defaults_to_the_accelerators() -> None:
    assert ModelMetadata(**GOOD).accelerator_arch == "sm90"
    neuron = ModelMetadata(**{**GOOD, "accelerator": "neuron-inferentia2", "precision": "bf16"})
    assert neuron.accelerator_arch == "neuron-v2"


def test_catalog_chips_are_named_vendor_model() -> None:
    assert {"nvidia-h100", "nvidia-l4", "nvidia-a10g", "neuron-inferentia2"} <= set(ACCELERATORS)


def test_every_problem_is_named_in_one_error() -> None:
    with pytest.raises(InvalidInputError) as caught:
        ModelMetadata(
            architecture="",
            precision="fp9",
            accelerator="nvidia-h100",
            builder="tensorrt-llm",
            builder_version="0.17.0",
            tensor_parallel_size=0,
            pipeline_parallel_size=1.5,
            accelerator_arch="sm80",
        )
    message = str(caught.value)
    assert "\n" not in message
    for expected in ("architecture ''", "precision 'fp9'", "tensor_parallel_size", "pipeline_parallel_size", "sm80"):
        assert expected in message


@pytest.mark.parametrize(
    ("accelerator", "precision"),
    [("nvidia-a10g", "fp8"), ("nvidia-h100", "fp4"), ("neuron-inferentia2", "fp8")],
)
def test_precision_must_run_on_the_accelerator(accelerator: str, precision: str) -> None:
    with pytest.raises(InvalidInputError, match=f"precision {precision} is not supported on {accelerator}"):
        ModelMetadata(**{**GOOD, "accelerator": accelerator, "precision": precision})


def test_unknown_accelerator_lists_the_known_ones() -> None:
    with pytest.raises(InvalidInputError, match=r"accelerator 'nvidia-h900' is not one of .*nvidia-h100"):
        ModelMetadata(**{**GOOD, "accelerator": "nvidia-h900"})


def test_file_values_are_overridden_by_flags(tmp_path: Path) -> None:
    path = tmp_path / "meta.json"
    path.write_text(json.dumps({**GOOD, "tensor_parallel_size": 4}))
    meta = load_metadata(path, {"precision": "bf16", "tensor_parallel_size": None})
    assert (meta.precision, meta.tensor_parallel_size) == ("bf16", 4)


def test_flags_alone_suffice() -> None:
    assert load_metadata(None, GOOD) == ModelMetadata(**GOOD)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        (json.dumps({**GOOD, "quantisation": "awq"}), "unknown key 'quantisation'"),
        (json.dumps({"architecture": "X"}), "missing key 'accelerator'"),
    ],
)
def test_bad_metadata_files(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "meta.json"
    path.write_text(content)
    with pytest.raises(InvalidInputError, match=reason) as caught:
        load_metadata(path, {})
    assert str(path) in str(caught.value)


def test_unreadable_metadata_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot read metadata file"):
        load_metadata(tmp_path / "absent.json", {})
