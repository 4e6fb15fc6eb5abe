"""`inferctl plan` writes the model repository the pods will load, rendered as the entrypoint renders it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from inference_platform.inferctl.plan.command import write_outputs
from inference_platform.inference_image.defaults import MODELS_DIR
from inference_platform.inference_image.llmapi import llm_args_schema
from inference_platform.inference_image.llmapi.repository import render_pod_repository
from inference_platform.inference_image.model_metrics import ttft_buckets_ms
from inference_platform.inference_image.neuron.repository import render_repository as render_neuron
from inference_platform.offline_plan.model_repository import server_memory_bytes, serving_json, write_model_repository
from inference_platform.settings import stack_files

GIB = 2**30


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_each_stacks_plan_holds_the_repository_its_pods_render(stack_plan, serving, tmp_path, stack):
    plan = stack_plan(stack)
    write_outputs(plan, tmp_path / "out")
    written = tmp_path / "out" / stack / "model-repository"
    expected = tmp_path / "expected"
    # What the entrypoint renders from the same settings, at its paths, in a container of the planned memory.
    memory = int(stack_files.load(stack).inference.resources.memory_gib * GIB)
    assert server_memory_bytes(plan.run.resources) == memory
    if serving[stack].backend == "neuron":
        render_neuron(
            serving[stack], expected, compiled_dir=MODELS_DIR / "engine", tokenizer_dir=MODELS_DIR / "tokenizer"
        )
    else:
        render_pod_repository(
            serving[stack],
            expected,
            models_dir=MODELS_DIR,
            host_memory_bytes=memory,
            ttft_buckets_ms=ttft_buckets_ms(serving[stack]),
        )
    assert _tree(written) == _tree(expected)
    llm = serving[stack].llm_model_name
    assert {p.name for p in written.iterdir()} == {llm}
    config = text_format.Parse((written / llm / "config.pbtxt").read_text(), model_config_pb2.ModelConfig())
    assert config.backend == "python" and config.max_batch_size == 0
    if llm == "tensorrt_llm":
        args = yaml.safe_load((written / llm / "1" / "model.yaml").read_text())
        assert llm_args_schema.check(args) == [] and args["model"] == str(MODELS_DIR / "checkpoint")


def test_a_second_plan_replaces_the_repository(stack_plan, tmp_path):
    out = tmp_path / "model-repository"
    (out / "stale").mkdir(parents=True)
    write_model_repository(stack_plan("dev").run.resources, out)
    assert not (out / "stale").exists() and (out / "tensorrt_llm" / "config.pbtxt").is_file()


def test_a_plan_without_serving_writes_nothing(tmp_path):
    out = tmp_path / "model-repository"
    out.mkdir()
    assert serving_json([]) is None
    assert write_model_repository([], out) == []
    assert not out.exists()
