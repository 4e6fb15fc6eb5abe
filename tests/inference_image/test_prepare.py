"""``prepare``: build arguments per stack, refusals, the node check and the published metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inference_platform.inference_image.accelerators import VisibleAccelerators
from inference_platform.inference_image.build_plan import NeuronCompilePlan, TrtllmBuildPlan, target_for
from inference_platform.inference_image.prepare import (
    PrepareOptions,
    check_node,
    copy_tokenizer,
    metadata_for,
    plan_for,
    run_prepare,
)

from inference_platform.errors import CommandError

POOLS = {"dev": "g6.xlarge", "prod": "p5.48xlarge", "npu": "inf2.24xlarge"}


def _options(instance_type: str, **fields) -> PrepareOptions:
    base = {
        "instance_type": instance_type,
        "engine_uri": "s3://models-bucket/llama/engine/1/",
        "tokenizer_uri": "s3://models-bucket/llama/tokenizer/1/",
        "work_dir": Path("/work"),
    }
    return PrepareOptions(**(base | fields))


def test_dev_builds_fp8_for_one_l4_with_the_llm_api(serving):
    plan = plan_for(serving["dev"], _options("g6.xlarge"))
    assert isinstance(plan, TrtllmBuildPlan)
    args = plan.llm_api_arguments()
    assert args["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert (args["tensor_parallel_size"], args["pipeline_parallel_size"], args["dtype"]) == (1, 1, "bfloat16")
    assert args["quant_config"] == {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
    assert args["calib_config"] == {"calib_batches": 512}
    assert args["build_config"] == {
        "max_batch_size": 16,
        "max_input_len": 4096,
        "max_seq_len": 8192,
        "max_num_tokens": 4096,
        "max_beam_width": 1,
        "kv_cache_type": "PAGED",
        "plugin_config": {"use_paged_context_fmha": True},
    }
    assert plan.target.accelerator == "nvidia-l4" and plan.target.architecture == "sm89"


def test_prod_builds_tp4_on_h100_and_the_trtllm_build_route_checks_the_checkpoint(serving):
    plan = plan_for(serving["prod"], _options("p5.48xlarge"))
    assert plan.llm_api_arguments()["tensor_parallel_size"] == 4
    argv = plan.trtllm_build_argv(Path("/ckpt"), Path("/work/engine"))
    assert argv[:3] == ["trtllm-build", "--checkpoint_dir=/ckpt", "--output_dir=/work/engine"]
    for flag in ("--max_batch_size=64", "--max_seq_len=16384", "--kv_cache_type=paged", "--workers=4"):
        assert flag in argv
    assert "--use_paged_context_fmha=enable" in argv and "--use_fp8_context_fmha=enable" in argv
    good = {
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
        "mapping": {"tp_size": 4, "pp_size": 1},
    }
    assert plan.checkpoint_problems(good) == []
    bad = {"quantization": {"quant_algo": None}, "mapping": {"tp_size": 2}}
    assert len(plan.checkpoint_problems(bad)) == 3


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
        ("dev", "g5.xlarge", {}, "serving.precision: fp8 does not run on g5.xlarge (a10g, sm86)"),
        ("prod", "g6.xlarge", {}, "needs 4 GPUs per node; g6.xlarge has 1 and no multi-node set"),
        ("prod", "p5.48xlarge", {"tensor_parallel": 16}, "needs 16 GPUs per node; p5.48xlarge has 8"),
        ("prod", "p5.48xlarge", {"tensor_parallel": 1, "precision": "bf16"}, "less than one maxSeqLen sequence"),
        ("dev", "g6.xlarge", {"model": "Llama-9-1T"}, "serving.model: unknown model 'Llama-9-1T'"),
        ("dev", "g6.xlarge", {"checkpoint": None}, "serving.checkpoint: missing"),
        ("npu", "p5.48xlarge", {}, "neuron needs neuron accelerators; p5.48xlarge has h100"),
        ("dev", "m7i.large", {}, "tensorrtllm needs nvidia accelerators; m7i.large has none"),
    ],
)
def test_prepare_refuses_what_the_pool_cannot_run(serving, stack, instance_type, update, message):
    with pytest.raises(CommandError) as err:
        plan_for(serving[stack].model_copy(update=update), _options(instance_type))
    assert err.value.exit_code == 2
    assert message in str(err.value)


def test_speculative_builds_need_the_draft_weights(serving):
    medusa = serving["dev"].model_copy(
        update={"speculative": serving["dev"].speculative.model_copy(update={"mode": "medusa", "draft_length": 4})}
    )
    with pytest.raises(CommandError, match="needs --speculative-checkpoint"):
        plan_for(medusa, _options("g6.xlarge"))
    plan = plan_for(medusa, _options("g6.xlarge", speculative_checkpoint="/heads"))
    assert plan.llm_api_arguments("/heads")["speculative_config"] == {
        "decoding_type": "Medusa",
        "max_draft_len": 4,
        "speculative_model": "/heads",
    }
    assert "--speculative_decoding_mode=medusa" in plan.trtllm_build_argv(Path("/c"), Path("/o"))


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

    with pytest.raises(CommandError, match=r"refusing to build for g5.xlarge"):
        run_prepare(serving["dev"], _options("g5.xlarge"), probe=fail, upload=fail)
    with pytest.raises(CommandError, match="must be built on sm89"):
        run_prepare(
            serving["dev"],
            _options("g6.xlarge"),
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
