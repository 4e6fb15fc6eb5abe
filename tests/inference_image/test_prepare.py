"""``prepare``: the Neuron compile arguments, refusals (GPU stacks build nothing), the node check and the
published metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference_platform.errors import CommandError
from inference_platform.inference_image.accelerators import VisibleAccelerators
from inference_platform.inference_image.build_plan import NeuronCompilePlan, target_for
from inference_platform.inference_image.prepare import (
    NOTHING_TO_BUILD,
    PrepareOptions,
    check_node,
    copy_tokenizer,
    metadata_for,
    plan_for,
    run_prepare,
)

POOLS = {"dev": "g6.xlarge", "prod": "p5.48xlarge", "npu": "inf2.24xlarge"}


def _options(instance_type: str, **fields) -> PrepareOptions:
    base = {
        "instance_type": instance_type,
        "engine_uri": "s3://models-bucket/llama/engine/1/",
        "tokenizer_uri": "s3://models-bucket/llama/tokenizer/1/",
        "work_dir": Path("/work"),
    }
    return PrepareOptions(**(base | fields))


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_gpu_stacks_have_no_engine_to_build(serving, stack):
    """The engine flow is gone: prepare says what replaces it, before looking at anything else."""
    with pytest.raises(CommandError) as err:
        plan_for(serving[stack], _options(POOLS[stack]))
    assert err.value.exit_code == 2 and str(err.value) == NOTHING_TO_BUILD
    assert "inferctl artifacts upload" in NOTHING_TO_BUILD and "no engine build" in NOTHING_TO_BUILD


def test_npu_compiles_bf16_over_eight_neuroncores(serving):
    plan = plan_for(serving["npu"], _options("inf2.24xlarge"))
    assert isinstance(plan, NeuronCompilePlan)
    args = plan.neuron_config_arguments()
    assert (args["tp_degree"], args["batch_size"], args["seq_len"], args["max_context_length"]) == (8, 8, 4096, 2048)
    assert args["torch_dtype"] == "bfloat16" and args["save_sharded_checkpoint"] and "quantized" not in args
    assert plan.target.accelerator == "neuron-inferentia2" and plan.target.architecture == "neuron-v2"
    int8 = serving["npu"].model_copy(update={"precision": "int8_weight_only"})
    quantized = plan_for(int8, _options("inf2.24xlarge")).neuron_config_arguments(Path("/work/quantized"))
    assert quantized["quantized"] and quantized["quantization_dtype"] == "int8"


@pytest.mark.parametrize(
    ("stack", "instance_type", "update", "message"),
    [
        ("npu", "inf2.24xlarge", {"tensor_parallel": 32}, "needs 32 NeuronCores per node; inf2.24xlarge has 12"),
        ("npu", "inf2.24xlarge", {"model": "Llama-9-1T"}, "serving.model: unknown model 'Llama-9-1T'"),
        ("npu", "inf2.24xlarge", {"checkpoint": None}, "serving.checkpoint: missing"),
        ("npu", "p5.48xlarge", {}, "neuron needs neuron accelerators; p5.48xlarge has h100"),
        ("npu", "m7i.large", {}, "neuron needs neuron accelerators; m7i.large has none"),
    ],
)
def test_prepare_refuses_what_the_pool_cannot_run(serving, stack, instance_type, update, message):
    with pytest.raises(CommandError) as err:
        plan_for(serving[stack].model_copy(update=update), _options(instance_type))
    assert err.value.exit_code == 2
    assert message in str(err.value)


def test_the_manifest_records_the_target_accelerator_and_its_architecture(serving):
    for stack, instance_type in POOLS.items():
        meta = metadata_for(
            serving[stack],
            target_for(instance_type),
            architecture="LlamaForCausalLM",
            builder="tensorrt-llm",
            builder_version="0.20.0",
        )
        target = target_for(instance_type)
        assert (meta.accelerator, meta.accelerator_arch) == (target.accelerator, target.architecture)
        assert meta.tensor_parallel_size == serving[stack].tensor_parallel
        assert meta.precision == serving[stack].precision


def test_the_build_node_must_carry_the_target_architecture():
    target = target_for("p5.48xlarge")
    check_node(target, VisibleAccelerators("nvidia", "sm90", 8, 8))
    with pytest.raises(CommandError, match="must be built on sm90"):
        check_node(target, VisibleAccelerators("nvidia", "sm89", 1, 1, ("NVIDIA L4",)))


def test_a_refused_prepare_never_builds_or_uploads(serving):
    def fail(*args, **kwargs):
        raise AssertionError("nothing may run after a refusal")

    with pytest.raises(CommandError, match=r"refusing to build for p5.48xlarge"):
        run_prepare(serving["npu"], _options("p5.48xlarge"), probe=fail, upload=fail)
    with pytest.raises(CommandError, match="nothing to prepare"):
        run_prepare(serving["dev"], _options("g6.xlarge"), probe=fail, upload=fail)
    with pytest.raises(CommandError, match="must be built on neuron-v2"):
        run_prepare(
            serving["npu"],
            _options("inf2.24xlarge"),
            probe=lambda: VisibleAccelerators("nvidia", "sm86", 1, 1),
            upload=fail,
        )


def test_tokenizer_files_are_copied_from_the_checkpoint(tmp_path, tokenizer_dir):
    target = tmp_path / "tokenizer"
    target.mkdir()
    assert copy_tokenizer(tokenizer_dir, target) == ["tokenizer.json", "tokenizer_config.json"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    with pytest.raises(CommandError, match=r"no tokenizer.json"):
        copy_tokenizer(empty, target)
