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


def test_a_stack_with_several_models_plans_a_repository_per_rollout(tmp_path):
    """The dev example with a second model and a canary (docs/examples/Pulumi.dev-rollout.yaml): one repository per
    rollout, each what the entrypoint renders from that rollout's own ConfigMap in a container of its own memory.
    ``inferctl plan --stack-file`` on it stopped with a traceback before (it expected one serving.json)."""
    from inference_platform.inferctl.plan.command import make_plan
    from inference_platform.inference_image.settings_source import load_file
    from inference_platform.offline_plan.model_repository import rollouts
    from tests.conftest import REPO

    plan = make_plan(REPO, "dev", stack_file=REPO / "docs" / "examples" / "Pulumi.dev-rollout.yaml")
    out = tmp_path / "out" / "dev"
    (out / "model-repository-triton-gone").mkdir(parents=True)  # a rollout an earlier plan had
    write_outputs(plan, tmp_path / "out")
    found = rollouts(plan.run.resources)
    assert [r.app for r in found] == [
        "triton", "triton-llama-3-1-8b-img-2026-12-5", "triton-qwen2-5-7b-instruct"]  # fmt: skip
    written = sorted(p.name for p in out.iterdir() if p.name.startswith("model-repository"))
    assert written == ["model-repository", *(f"model-repository-{r.app}" for r in found[1:])]
    for rollout, name in zip(found, written, strict=True):
        settings = tmp_path / f"{rollout.app}.json"
        settings.write_text(rollout.serving_json)
        serving = load_file(settings)
        expected = tmp_path / "expected" / rollout.app
        render_pod_repository(serving, expected, models_dir=MODELS_DIR, host_memory_bytes=rollout.memory_bytes,
                              ttft_buckets_ms=ttft_buckets_ms(serving))  # fmt: skip
        assert _tree(out / name) == _tree(expected)
        assert rollout.memory_bytes == int(stack_files.load("dev").inference.resources.memory_gib * GIB)
    # Each repository is its own model's: Llama's stop words are Llama-3's end tokens, Qwen's are not.
    assert _tree(out / written[2]) != _tree(out / "model-repository")
    assert "<|eot_id|>" in (out / "model-repository" / "tensorrt_llm" / "config.pbtxt").read_text()
    assert "<|eot_id|>" not in (out / written[2] / "tensorrt_llm" / "config.pbtxt").read_text()
