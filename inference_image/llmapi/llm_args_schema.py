"""The LLM API's argument schema at the pinned TensorRT-LLM, and a check of ``model.yaml`` against it.

Facts, not code: the field names of ``TorchLlmArgs`` (with ``BaseLlmArgs``), ``KvCacheConfig``,
``SchedulerConfig`` and the speculative configs, read in NVIDIA/TensorRT-LLM
``tensorrt_llm/llmapi/llm_args.py`` (``SOURCE_LLM_ARGS``). Every one of those models is a pydantic
``StrictBaseModel`` with ``extra="forbid"``, so one unknown key in ``model.yaml`` makes ``LLM(**args)``
fail when the model loads on a GPU; ``check`` finds it here instead. Types and bounds are pinned for the
keys the renderer writes; the other names are accepted as names only (``ANY``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from inference_platform.inference_image.llmapi import release

# The llm_args.py copy read: the 1.2 development line (TrtLlmArgs/BuildConfig still present, PARD and
# skip-softmax attention added, speculative_model with the speculative_model_dir alias). The
# release/1.2.1 branch itself could not be read here (the repository snapshot is 2.5 GB); every name
# the renderer writes is also present in the newest stored copy (2026, 314,102 characters).
SOURCE_LLM_ARGS = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py, 1.2 line (search-index copy, 139,423 characters); "
    f"the image ships TensorRT-LLM {release.TENSORRT_LLM_VERSION} (release/1.2.1)"
)
SOURCE_LLMAPI_MODEL = (
    "NVIDIA/TensorRT-LLM triton_backend/all_models/llmapi/tensorrt_llm/1/model.py @ b35ac1b6 "
    "(tensorrt_llm/version.py there: 1.2.0rc2): LLM(**update_llm_args_with_extra_dict({}, model.yaml))"
)


@dataclass(frozen=True)
class Int:
    minimum: int | None = None
    maximum: int | None = None


@dataclass(frozen=True)
class Float:
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class Choice:
    values: tuple[str, ...]


@dataclass(frozen=True)
class Model:
    """A pydantic model of the LLM API: its field names, the specs of those the renderer writes."""

    name: str
    names: frozenset[str]
    typed: Mapping[str, Any] = field(default_factory=dict)
    required: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Tagged:
    """A discriminated union (``Field(discriminator=...)``): the tag value picks the model."""

    tag: str
    variants: Mapping[str, Model]


ANY = object()  # an accepted name whose value this check does not type

_KV_CACHE_CONFIG = Model(
    name="KvCacheConfig",
    names=frozenset(
        {
            "enable_block_reuse",
            "max_tokens",
            "max_attention_window",
            "sink_token_length",
            "free_gpu_memory_fraction",
            "host_cache_size",
            "onboard_blocks",
            "cross_kv_cache_fraction",
            "secondary_offload_min_priority",
            "event_buffer_max_size",
            "attention_dp_events_gather_period_ms",
            "enable_partial_reuse",
            "copy_on_partial_reuse",
            "use_uvm",
            "max_gpu_total_bytes",
            "dtype",
            "mamba_ssm_cache_dtype",
            "tokens_per_block",
            "use_kv_cache_manager_v2",
            "max_util_for_resume",
        }
    ),
    typed=MappingProxyType(
        {
            "enable_block_reuse": bool,
            "max_tokens": Int(minimum=1),
            # Field(default=0.9, ge=0, le=1)
            "free_gpu_memory_fraction": Float(minimum=0, maximum=1),
            # "Size of the host cache in bytes"; None (unset) means no host tier.
            "host_cache_size": Int(minimum=0),
            # "pure python field ... only for the Pytorch backend"; the TorchLlmArgs validator maps fp8.
            "dtype": Choice(("auto", "fp8")),
            "tokens_per_block": Int(minimum=1),
        }
    ),
)

_SCHEDULER_CONFIG = Model(
    name="SchedulerConfig",
    names=frozenset(
        {"capacity_scheduler_policy", "context_chunking_policy", "dynamic_batch_config", "waiting_queue_policy"}
    ),
    typed=MappingProxyType(
        {
            "capacity_scheduler_policy": Choice(("MAX_UTILIZATION", "GUARANTEED_NO_EVICT", "STATIC_BATCH")),
            "context_chunking_policy": Choice(("FIRST_COME_FIRST_SERVED", "EQUAL_PROGRESS")),
        }
    ),
)

# DecodingBaseConfig: speculative_model has validation_alias AliasChoices("speculative_model",
# "speculative_model_dir"), so both names are accepted; the renderer writes speculative_model.
_DECODING_BASE = frozenset(
    {
        "decoding_type",
        "max_draft_len",
        "max_total_draft_tokens",
        "speculative_model",
        "speculative_model_dir",
        "max_concurrency",
        "draft_len_schedule",
        "load_format",
        "acceptance_window",
        "acceptance_length_threshold",
        "allow_advanced_sampling",
    }
)
_SPECULATIVE_CONFIG = Tagged(
    tag="decoding_type",
    variants=MappingProxyType(
        {
            # EagleDecodingConfig.validate_eagle_config: "max_draft_len must be > 0 for Eagle";
            # validate_speculative_model: "Draft model must be provided for EAGLE".
            "Eagle3": Model(
                name="Eagle3DecodingConfig",
                names=_DECODING_BASE
                | {
                    "eagle_choices",
                    "greedy_sampling",
                    "posterior_threshold",
                    "use_dynamic_tree",
                    "dynamic_tree_max_topK",
                    "num_eagle_layers",
                    "max_non_leaves_per_layer",
                    "eagle3_one_model",
                    "eagle3_layers_to_capture",
                    "eagle3_model_arch",
                },
                typed=MappingProxyType(
                    {"max_draft_len": Int(minimum=1), "speculative_model": str, "eagle3_one_model": bool}
                ),
                required=frozenset({"max_draft_len", "speculative_model"}),
            ),
            # MTPDecodingConfig.set_max_total_draft_tokens sets max_draft_len = num_nextn_predict_layers:
            # the number of MTP modules is MTP's candidate length.
            "MTP": Model(
                name="MTPDecodingConfig",
                names=_DECODING_BASE
                | {
                    "num_nextn_predict_layers",
                    "use_relaxed_acceptance_for_thinking",
                    "relaxed_topk",
                    "relaxed_delta",
                    "use_mtp_vanilla",
                    "mtp_eagle_one_model",
                    "begin_thinking_phase_token",
                    "end_thinking_phase_token",
                },
                typed=MappingProxyType({"num_nextn_predict_layers": Int(minimum=1)}),
                required=frozenset({"num_nextn_predict_layers"}),
            ),
            # NGramDecodingConfig.validate_ngram_config: "max_draft_len must be > 0 for NGram";
            # max_matching_ngram_size: PositiveInt (default 2).
            "NGram": Model(
                name="NGramDecodingConfig",
                names=_DECODING_BASE | {"max_matching_ngram_size", "is_keep_all", "is_use_oldest", "is_public_pool"},
                typed=MappingProxyType({"max_draft_len": Int(minimum=1), "max_matching_ngram_size": Int(minimum=1)}),
                required=frozenset({"max_draft_len"}),
            ),
            # DraftTargetDecodingConfig: decoding_type Literal["Draft_Target"]; max_draft_len > 0 and
            # speculative_model required (validate_draft_target_config).
            "Draft_Target": Model(
                name="DraftTargetDecodingConfig",
                names=_DECODING_BASE,
                typed=MappingProxyType({"max_draft_len": Int(minimum=1), "speculative_model": str}),
                required=frozenset({"max_draft_len", "speculative_model"}),
            ),
        }
    ),
)

# BaseLlmArgs then TorchLlmArgs, every field (mpi_session is passed as its alias _mpi_session).
_LLM_ARGS_NAMES = frozenset(
    {
        "model",
        "tokenizer",
        "tokenizer_mode",
        "custom_tokenizer",
        "skip_tokenizer_init",
        "trust_remote_code",
        "tensor_parallel_size",
        "dtype",
        "revision",
        "tokenizer_revision",
        "model_kwargs",
        "pipeline_parallel_size",
        "context_parallel_size",
        "gpus_per_node",
        "moe_cluster_parallel_size",
        "moe_tensor_parallel_size",
        "moe_expert_parallel_size",
        "enable_attention_dp",
        "enable_lm_head_tp_in_adp",
        "pp_partition",
        "cp_config",
        "load_format",
        "enable_lora",
        "lora_config",
        "kv_cache_config",
        "enable_chunked_prefill",
        "guided_decoding_backend",
        "batched_logits_processor",
        "iter_stats_max_iterations",
        "request_stats_max_iterations",
        "peft_cache_config",
        "scheduler_config",
        "cache_transceiver_config",
        "sparse_attention_config",
        "speculative_config",
        "max_batch_size",
        "max_input_len",
        "max_seq_len",
        "max_beam_width",
        "max_num_tokens",
        "gather_generation_logits",
        "num_postprocess_workers",
        "postprocess_tokenizer_dir",
        "reasoning_parser",
        "decoding_config",
        "_mpi_session",
        "otlp_traces_endpoint",
        "backend",
        "return_perf_metrics",
        "perf_metrics_max_requests",
        "orchestrator_type",
        "env_overrides",
        # TorchLlmArgs
        "garbage_collection_gen0_threshold",
        "cuda_graph_config",
        "attention_dp_config",
        "disable_overlap_scheduler",
        "moe_config",
        "nvfp4_gemm_config",
        "attn_backend",
        "sampler_type",
        "sampler_force_async_worker",
        "enable_iter_perf_stats",
        "enable_iter_req_stats",
        "print_iter_log",
        "batch_wait_timeout_ms",
        "batch_wait_timeout_iters",
        "batch_wait_max_tokens_ratio",
        "torch_compile_config",
        "enable_autotuner",
        "enable_layerwise_nvtx_marker",
        "enable_min_latency",
        "stream_interval",
        "force_dynamic_quantization",
        "allreduce_strategy",
        "checkpoint_loader",
        "checkpoint_format",
        "kv_connector_config",
        "mm_encoder_only",
        "ray_worker_extension_cls",
        "ray_placement_config",
        "enable_sleep",
        "use_cute_dsl_blockscaling_mm",
        "use_cute_dsl_blockscaling_bmm",
        "disable_flashinfer_sampling",
        "max_stats_len",
        "layer_wise_benchmarks_config",
    }
)

TORCH_LLM_ARGS = Model(
    name="TorchLlmArgs",
    names=_LLM_ARGS_NAMES,
    typed=MappingProxyType(
        {
            "model": str,
            # TorchLlmArgs.backend: Literal["pytorch"] (deprecated; the llmapi template still writes it).
            "backend": Choice(("pytorch",)),
            "tokenizer": str,
            "trust_remote_code": bool,
            "tensor_parallel_size": Int(minimum=1),
            "pipeline_parallel_size": Int(minimum=1),
            "max_batch_size": Int(minimum=1),
            "max_input_len": Int(minimum=1),
            "max_seq_len": Int(minimum=2),
            "max_num_tokens": Int(minimum=1),
            "max_beam_width": Int(minimum=1),
            "enable_chunked_prefill": bool,
            "disable_overlap_scheduler": bool,
            "enable_iter_perf_stats": bool,
            "guided_decoding_backend": Choice(("xgrammar", "llguidance")),
            "kv_cache_config": _KV_CACHE_CONFIG,
            "scheduler_config": _SCHEDULER_CONFIG,
            "speculative_config": _SPECULATIVE_CONFIG,
        }
    ),
    required=frozenset({"model"}),
)


def check(args: Mapping[str, Any]) -> list[str]:
    """Why ``LLM(**args)`` would refuse ``args`` at the pinned TensorRT-LLM (empty when it accepts them)."""
    return _check_model(TORCH_LLM_ARGS, args, "")


def _check_model(model: Model, values: Any, path: str) -> list[str]:
    where = path or model.name
    if not isinstance(values, Mapping):
        return [f"{where}: got {values!r}; expected a mapping ({model.name})"]
    problems = []
    for key in sorted(model.required - set(values)):
        problems.append(f"{_join(path, key)}: missing; {model.name} requires it")
    for key, value in values.items():
        at = _join(path, key)
        if key not in model.names:
            problems.append(f"{at}: not a field of {model.name} (extra='forbid' refuses it)")
            continue
        spec = model.typed.get(key, ANY)
        problems += _check_value(spec, value, at)
    return problems


def _check_value(spec: Any, value: Any, at: str) -> list[str]:
    if spec is ANY:
        return []
    if value is None:
        return [f"{at}: got null; leave the key out instead"]
    if isinstance(spec, Model):
        return _check_model(spec, value, at)
    if isinstance(spec, Tagged):
        if not isinstance(value, Mapping):
            return [f"{at}: got {value!r}; expected a mapping with {spec.tag}"]
        tag = value.get(spec.tag)
        if not isinstance(tag, str) or tag not in spec.variants:
            return [f"{at}.{spec.tag}: got {tag!r}; expected one of {', '.join(spec.variants)}"]
        return _check_model(spec.variants[tag], value, at)
    if isinstance(spec, Choice):
        return [] if value in spec.values else [f"{at}: got {value!r}; expected one of {', '.join(spec.values)}"]
    if spec is bool:
        return [] if isinstance(value, bool) else [f"{at}: got {value!r}; expected true or false"]
    if spec is str:
        return [] if isinstance(value, str) and value else [f"{at}: got {value!r}; expected a non-empty string"]
    if isinstance(spec, Int):
        if isinstance(value, bool) or not isinstance(value, int):
            return [f"{at}: got {value!r}; expected an integer"]
        return _bounds(spec, value, at)
    if isinstance(spec, Float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return [f"{at}: got {value!r}; expected a number"]
        return _bounds(spec, value, at)
    raise TypeError(f"unknown spec {spec!r} at {at}")


def _bounds(spec: Int | Float, value: float, at: str) -> list[str]:
    if spec.minimum is not None and value < spec.minimum:
        return [f"{at}: got {value}; at least {spec.minimum}"]
    if spec.maximum is not None and value > spec.maximum:
        return [f"{at}: got {value}; at most {spec.maximum}"]
    return []


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ``SamplingParams`` and ``GuidedDecodingParams`` (tensorrt_llm/sampling_params.py, the 1.0 line's stored copy at
# 000a01de; dataclasses with kw_only=True, so any other keyword is a TypeError): what our model.py may pass
# per request, and what the CPU stand-in engine may accept.
SOURCE_SAMPLING_PARAMS = "NVIDIA/TensorRT-LLM tensorrt_llm/sampling_params.py (1.0 line, stored copy at 000a01de)"
SAMPLING_PARAMS_NAMES = frozenset(
    {
        "end_id",
        "pad_id",
        "max_tokens",
        "bad",
        "bad_token_ids",
        "stop",
        "stop_token_ids",
        "include_stop_str_in_output",
        "embedding_bias",
        "logits_processor",
        "apply_batched_logits_processor",
        "n",
        "best_of",
        "use_beam_search",
        "top_k",
        "top_p",
        "top_p_min",
        "top_p_reset_ids",
        "top_p_decay",
        "seed",
        "temperature",
        "min_tokens",
        "beam_search_diversity_rate",
        "repetition_penalty",
        "presence_penalty",
        "frequency_penalty",
        "length_penalty",
        "early_stopping",
        "no_repeat_ngram_size",
        "min_p",
        "beam_width_array",
        "logprobs",
        "prompt_logprobs",
        "return_context_logits",
        "return_generation_logits",
        "exclude_input_from_output",
        "return_encoder_output",
        "return_perf_metrics",
        "additional_model_outputs",
        "lookahead_config",
        "guided_decoding",
        "ignore_eos",
        "detokenize",
        "add_special_tokens",
        "truncate_prompt_tokens",
        "skip_special_tokens",
        "spaces_between_special_tokens",
    }
)
GUIDED_DECODING_NAMES = frozenset({"json", "regex", "grammar", "json_object", "structural_tag"})
