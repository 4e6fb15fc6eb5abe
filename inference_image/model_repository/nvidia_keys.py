"""The ``parameters`` keys of NVIDIA's in-flight batching model templates for the pinned release.

Facts, not code: the key names (in NVIDIA's order) of each ``config.pbtxt`` under
``all_models/inflight_batcher_llm/`` in triton-inference-server/tensorrtllm_backend, branch ``r25.05``
(the branch of our ``nvcr.io/nvidia/tritonserver:25.05-trtllm-python-py3`` base image, TensorRT-LLM
0.19). The C++ backend reads some keys with no fallback (``tokenizer_dir``, ``guided_decoding_backend``,
``xgrammar_tokenizer_info_path`` in ``model_instance_state.cc``: "Cannot find parameter with name"),
so every rendered config carries every key, empty where unused, as NVIDIA's template does.

Bumping the base image tag means re-reading these lists from the new branch (``git show
<branch>:all_models/inflight_batcher_llm/<model>/config.pbtxt``) and updating ``SOURCE``.
"""

from __future__ import annotations

from types import MappingProxyType

SOURCE = MappingProxyType(
    {
        "repository": "https://github.com/triton-inference-server/tensorrtllm_backend",
        "branch": "r25.05",
        "commit": "c2e65b88d85255be30cf50440a91662abeb497dd",
        "path": "all_models/inflight_batcher_llm/<model>/config.pbtxt",
    }
)

TENSORRT_LLM = (
    "max_beam_width",
    "FORCE_CPU_ONLY_INPUT_TENSORS",
    "gpt_model_type",
    "gpt_model_path",
    "encoder_model_path",
    "max_tokens_in_paged_kv_cache",
    "max_attention_window_size",
    "sink_token_length",
    "batch_scheduler_policy",
    "kv_cache_free_gpu_mem_fraction",
    "cross_kv_cache_fraction",
    "kv_cache_host_memory_bytes",
    "kv_cache_onboard_blocks",
    "exclude_input_in_output",
    "cancellation_check_period_ms",
    "stats_check_period_ms",
    "iter_stats_max_iterations",
    "request_stats_max_iterations",
    "enable_kv_cache_reuse",
    "normalize_log_probs",
    "enable_chunked_context",
    "gpu_device_ids",
    "participant_ids",
    "num_nodes",
    "lora_cache_optimal_adapter_size",
    "lora_cache_max_adapter_size",
    "lora_cache_gpu_memory_fraction",
    "lora_cache_host_memory_bytes",
    "lora_prefetch_dir",
    "decoding_mode",
    "executor_worker_path",
    "lookahead_window_size",
    "lookahead_ngram_size",
    "lookahead_verification_set_size",
    "medusa_choices",
    "eagle_choices",
    "gpu_weights_percent",
    "enable_context_fmha_fp32_acc",
    "multi_block_mode",
    "cuda_graph_mode",
    "cuda_graph_cache_size",
    "speculative_decoding_fast_logits",
    "tokenizer_dir",
    "guided_decoding_backend",
    "xgrammar_tokenizer_info_path",
)
"""``tensorrt_llm/config.pbtxt`` (blob a97a42aaf536219a264942db69b474ebbe52afd4). NVIDIA's template also
has ``enable_trt_overlap`` commented out ("deprecated and doesn't have any effect"): not a key."""

PREPROCESSING = ("tokenizer_dir", "add_special_tokens", "multimodal_model_path", "gpt_model_path", "max_num_images")
"""``preprocessing/config.pbtxt`` (blob b21585e4bd377727b0d5ade5325f10a355e32bca)."""

POSTPROCESSING = ("tokenizer_dir", "skip_special_tokens")
"""``postprocessing/config.pbtxt`` (blob 9f3655ef4d78fc0631db9899c03041300f86b00f)."""

TENSORRT_LLM_BLS = (
    "accumulate_tokens",
    "tensorrt_llm_model_name",
    "tensorrt_llm_draft_model_name",
    "multimodal_encoders_name",
)
"""``tensorrt_llm_bls/config.pbtxt`` (blob fdc016c316f949d6d22b0e32a1a333fc67a5d5fd)."""

ENSEMBLE: tuple[str, ...] = ()
"""``ensemble/config.pbtxt`` (blob 7b6d0f0d8a49a5a26b1c40587877065ad1088ba0) has no ``parameters``."""

KEYS = MappingProxyType(
    {
        "tensorrt_llm": TENSORRT_LLM,
        "preprocessing": PREPROCESSING,
        "postprocessing": POSTPROCESSING,
        "tensorrt_llm_bls": TENSORRT_LLM_BLS,
        "ensemble": ENSEMBLE,
    }
)
"""Model name -> NVIDIA's parameter keys for it."""

OUR_KEYS = MappingProxyType(
    {
        "tensorrt_llm": (),
        # Our preprocessing refuses prompts that cannot fit the engine before they reach it.
        "preprocessing": ("max_input_len", "max_seq_len"),
        # Our postprocessing calls the LLM step itself (the ensemble's streams decode whole).
        "postprocessing": ("tensorrt_llm_model_name",),
        # Our BLS detokenizes itself (incrementally) instead of calling postprocessing.
        "tensorrt_llm_bls": ("tokenizer_dir", "skip_special_tokens"),
        "ensemble": (),
    }
)
"""Model name -> keys our Python models read beyond NVIDIA's (each with its reason above)."""
