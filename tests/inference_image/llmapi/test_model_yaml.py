"""model.yaml of every shipped GPU stack is accepted by the pinned LLM API schema; each serving feature
renders to the argument TensorRT-LLM reads; the schema refuses what ``LLM(**args)`` would refuse."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_platform.inference_image.llmapi import llm_args_schema
from inference_platform.inference_image.llmapi.repository import render_model_yaml
from inference_platform.inference_image.render import RenderError
from inference_platform.settings import stack_files

GPU_STACKS = ("dev", "prod")
CHECKPOINT = Path("/models/checkpoint")
GIB = 2**30


def _memory(settings) -> int:
    return int(settings.inference.resources.memory_gib * GIB)


@pytest.mark.parametrize("stack", GPU_STACKS)
def test_every_gpu_stack_renders_arguments_the_pinned_llm_api_accepts(stack):
    settings = stack_files.load(stack)
    args = render_model_yaml(settings.serving, checkpoint_dir=CHECKPOINT, host_memory_bytes=_memory(settings))
    assert llm_args_schema.check(args) == []
    assert set(args) <= llm_args_schema.TORCH_LLM_ARGS.names
    assert args["model"] == str(CHECKPOINT) and args["backend"] == "pytorch"
    serving = settings.serving
    assert (args["tensor_parallel_size"], args["max_batch_size"], args["max_seq_len"]) == (
        serving.tensor_parallel,
        serving.max_batch_size,
        serving.max_seq_len,
    )
    # Both stacks: xgrammar for response_format, an fp8 KV cache, reuse, chunked prefill, the overlap scheduler.
    assert args["guided_decoding_backend"] == "xgrammar"
    assert args["kv_cache_config"]["dtype"] == "fp8" and args["kv_cache_config"]["enable_block_reuse"] is True
    assert args["enable_chunked_prefill"] is True and args["disable_overlap_scheduler"] is False
    assert args["scheduler_config"] == {"capacity_scheduler_policy": "GUARANTEED_NO_EVICT"}


def test_stream_interval_renders_as_the_llm_apis_argument():
    # TorchLlmArgs.stream_interval (PositiveInt, default 1; llm_args.py of the 1.2 line, shared/facts/engine.md 5).
    dev = stack_files.load("dev").serving
    assert render_model_yaml(dev, checkpoint_dir=CHECKPOINT)["stream_interval"] == 1
    wider = dev.model_copy(update={"batching": dev.batching.model_copy(update={"stream_interval": 8})})
    args = render_model_yaml(wider, checkpoint_dir=CHECKPOINT)
    assert args["stream_interval"] == 8 and llm_args_schema.check(args) == []


def test_prods_host_tier_is_its_share_of_the_pods_memory_per_rank():
    settings = stack_files.load("prod")
    kv = render_model_yaml(settings.serving, checkpoint_dir=CHECKPOINT, host_memory_bytes=_memory(settings))[
        "kv_cache_config"
    ]
    # 320 GiB x 0.25 over the 4 ranks of the node.
    assert kv["host_cache_size"] == 20 * GIB
    dev = stack_files.load("dev")
    assert "host_cache_size" not in render_model_yaml(dev.serving, checkpoint_dir=CHECKPOINT)["kv_cache_config"]
    with pytest.raises(RenderError, match="container's memory is unknown"):
        render_model_yaml(settings.serving, checkpoint_dir=CHECKPOINT)


@pytest.mark.parametrize(
    ("speculative", "expected"),
    [
        (
            {"method": "eagle3", "max_draft_len": 3, "draft_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
            {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": "/models/draft"},
        ),
        (
            {"method": "draft_model", "max_draft_len": 4, "draft_model": "meta-llama/Llama-3.2-1B-Instruct"},
            {"decoding_type": "Draft_Target", "max_draft_len": 4, "speculative_model": "/models/draft"},
        ),
        ({"method": "mtp", "max_draft_len": 1}, {"decoding_type": "MTP", "num_nextn_predict_layers": 1}),
        (
            {"method": "ngram", "max_draft_len": 5, "max_matching_ngram_size": 3},
            {"decoding_type": "NGram", "max_draft_len": 5, "max_matching_ngram_size": 3},
        ),
    ],
)
def test_each_speculative_method_renders_its_llm_api_config(speculative, expected):
    serving = stack_files.load("dev").serving
    serving = serving.model_copy(update={"speculative": serving.speculative.model_copy(update=speculative)})
    args = render_model_yaml(serving, checkpoint_dir=CHECKPOINT, draft_dir=Path("/models/draft"))
    assert args["speculative_config"] == expected
    assert llm_args_schema.check(args) == []


def test_a_draft_method_without_its_checkpoint_does_not_render():
    serving = stack_files.load("dev").serving
    spec = serving.speculative.model_copy(update={"method": "eagle3", "max_draft_len": 3, "draft_model": "x/y"})
    with pytest.raises(RenderError, match="needs the draft checkpoint"):
        render_model_yaml(serving.model_copy(update={"speculative": spec}), checkpoint_dir=CHECKPOINT)


def test_the_overlap_scheduler_and_guided_decoding_follow_the_settings():
    serving = stack_files.load("dev").serving
    off = serving.model_copy(
        update={
            "batching": serving.batching.model_copy(update={"overlap_scheduler": False}),
            "guided_decoding": serving.guided_decoding.model_copy(update={"backend": "none"}),
            "kv_cache": serving.kv_cache.model_copy(update={"enable_chunked_context": False, "dtype": "auto"}),
        }
    )
    args = render_model_yaml(off, checkpoint_dir=CHECKPOINT)
    assert args["disable_overlap_scheduler"] is True and args["enable_chunked_prefill"] is False
    assert "guided_decoding_backend" not in args and "dtype" not in args["kv_cache_config"]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"model": "/m", "max_draft_len": 3}, "max_draft_len: not a field of TorchLlmArgs"),
        ({"model": "/m", "build_config": {}}, None),  # BaseLlmArgs has no build_config: refused below
        ({"model": "/m", "kv_cache_config": {"host_cache_size": "20G"}}, "kv_cache_config.host_cache_size: got '20G'"),
        ({"model": "/m", "kv_cache_config": {"free_gpu_memory_fraction": 1.5}}, "at most 1"),
        ({"model": "/m", "kv_cache_config": {"enable_kv_cache_reuse": True}}, "not a field of KvCacheConfig"),
        ({"model": "/m", "guided_decoding_backend": "outlines"}, "expected one of xgrammar, llguidance"),
        ({"model": "/m", "speculative_config": {"decoding_type": "Medusa"}}, "speculative_config.decoding_type"),
        (
            {"model": "/m", "speculative_config": {"decoding_type": "Draft_Target", "max_draft_len": 2}},
            "speculative_config.speculative_model: missing",
        ),
        ({"model": "/m", "speculative_config": {"decoding_type": "NGram", "max_draft_len": 0}}, "at least 1"),
        ({"model": "/m", "disable_overlap_scheduler": "no"}, "expected true or false"),
        ({"tensor_parallel_size": 2}, "model: missing"),
        ({"model": "/m", "backend": "tensorrt"}, "expected one of pytorch"),
    ],
)
def test_the_schema_refuses_what_the_llm_api_refuses(args, problem):
    problems = llm_args_schema.check(args)
    if problem is None:
        assert problems == ["build_config: not a field of TorchLlmArgs (extra='forbid' refuses it)"]
    else:
        assert any(problem in p for p in problems), problems


def test_the_schema_pins_the_1_2_lines_field_names():
    names = llm_args_schema.TORCH_LLM_ARGS.names
    # TorchLlmArgs has neither the TensorRT engine's build_config nor TrtLlmArgs' calib_config/quant_config.
    assert {"build_config", "calib_config", "quant_config", "enable_build_cache"}.isdisjoint(names)
    for name in (
        "disable_overlap_scheduler",
        "enable_chunked_prefill",
        "guided_decoding_backend",
        "speculative_config",
    ):
        assert name in names
    assert set(llm_args_schema._SPECULATIVE_CONFIG.variants) == {"Eagle3", "MTP", "NGram", "Draft_Target"}
    assert "release/1.2.1" in llm_args_schema.SOURCE_LLM_ARGS
