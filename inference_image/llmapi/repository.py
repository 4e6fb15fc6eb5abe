"""Render the GPU model repository: one ``tensorrt_llm`` model on TensorRT-LLM's LLM API.

``model.yaml`` is ``LLM(**args)`` exactly, every key checked against the pinned argument schema
(``llm_args_schema.check``) before anything is written; ``config.pbtxt`` holds Triton's own settings and
the tensor contract (``contract``); ``model.py`` is copied from this package. The LLM API batches in
flight, so Triton hands each request straight to the model (``max_batch_size: 0``). The repository appears
at its destination only once complete (staged beside it, renamed into place).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from inference_platform.catalog import speculative
from inference_platform.catalog.stop_tokens import stop_tokens
from inference_platform.inference_image.llmapi import contract, llm_args_schema, release
from inference_platform.inference_image.openai_api.server_file import render_server_file
from inference_platform.inference_image.render import RenderError
from inference_platform.settings.serving import ServingSettings

VERSION_DIR = "1"
CODE_FILE = "model.py"
TOKENS_PER_BLOCK = 32
"""KvCacheConfig.tokens_per_block's default, written out: model.py counts cached tokens in these blocks."""
_PACKAGE = "inference_platform.inference_image.llmapi"


def render_model_yaml(
    serving: ServingSettings,
    *,
    checkpoint_dir: Path,
    tokenizer_dir: Path | None = None,
    draft_dir: Path | None = None,
    host_memory_bytes: int | None = None,
) -> dict[str, Any]:
    """The LLM API arguments of ``serving``; RenderError naming every key the pinned schema refuses.

    ``host_memory_bytes``: the serving container's memory, which kvCache.hostCacheFraction shares out
    (per rank: each rank's KV cache manager holds its own host tier)."""
    kv: dict[str, Any] = {
        "enable_block_reuse": serving.kv_cache.enable_reuse,
        "free_gpu_memory_fraction": serving.kv_cache.free_gpu_mem_fraction,
        "tokens_per_block": TOKENS_PER_BLOCK,
    }
    if serving.kv_cache.dtype == "fp8":
        kv["dtype"] = "fp8"
    if serving.kv_cache.max_tokens is not None:
        kv["max_tokens"] = serving.kv_cache.max_tokens
    problems = []
    if serving.kv_cache.host_cache_fraction:
        if not host_memory_bytes:
            problems.append("serving.kvCache.hostCacheFraction: set, but the container's memory is unknown")
        else:
            share = host_memory_bytes * serving.kv_cache.host_cache_fraction / serving.ranks_per_node
            kv["host_cache_size"] = int(share)
    args: dict[str, Any] = {
        "model": str(checkpoint_dir),
        "backend": "pytorch",
        "tensor_parallel_size": serving.tensor_parallel,
        "pipeline_parallel_size": serving.pipeline_parallel,
        "max_batch_size": serving.max_batch_size,
        "max_input_len": serving.max_input_len,
        "max_seq_len": serving.max_seq_len,
        "max_num_tokens": serving.max_num_tokens,
        "max_beam_width": serving.max_beam_width,
        "enable_chunked_prefill": serving.kv_cache.enable_chunked_context,
        "disable_overlap_scheduler": serving.batching.overlap_scheduler is False,
        "kv_cache_config": kv,
        "scheduler_config": {"capacity_scheduler_policy": serving.batching.scheduler_policy.upper()},
        # Tokens per streamed response: one event per response through the model, Triton and the OpenAI server.
        "stream_interval": serving.batching.stream_interval,
        # The executor records iteration stats (kvCacheStats) only with this: the model's KV-cache gauges read them.
        "enable_iter_perf_stats": True,
    }
    if tokenizer_dir is not None:
        # The verified tokenizer artifact, the one the OpenAI server counts and templates with.
        args["tokenizer"] = str(tokenizer_dir)
    if serving.guided_decoding.backend != "none":
        args["guided_decoding_backend"] = serving.guided_decoding.backend
    spec = serving.speculative
    if spec.method != "none":
        config: dict[str, Any] = {"decoding_type": speculative.DECODING_TYPE[spec.method]}
        if spec.method == "mtp":
            config["num_nextn_predict_layers"] = spec.max_draft_len
        else:
            config["max_draft_len"] = spec.max_draft_len
        if spec.method == "ngram":
            config["max_matching_ngram_size"] = spec.max_matching_ngram_size
        if spec.method in speculative.NEEDS_DRAFT_MODEL:
            if draft_dir is None:
                problems.append(f"serving.speculative.draftModel: method {spec.method} needs the draft checkpoint")
            else:
                config["speculative_model"] = str(draft_dir)
        args["speculative_config"] = config
    problems += [f"model.yaml: {p} ({llm_args_schema.SOURCE_LLM_ARGS})" for p in llm_args_schema.check(args)]
    if problems:
        raise RenderError(problems)
    return args


def render_config(serving: ServingSettings, *, ttft_buckets_ms: tuple[float, ...] = ()) -> str:
    """``tensorrt_llm/config.pbtxt``; with ``ttft_buckets_ms``, the first-response histogram's buckets
    (``model_metrics``, Triton 24.11 and later)."""
    parameters = {
        contract.PARAMETER_LLM_CONFIG: contract.LLM_CONFIG_FILE,
        contract.PARAMETER_STOP_WORDS: json.dumps(list(stop_tokens(serving.model)), ensure_ascii=False),
        contract.PARAMETER_CANCELLATION_PERIOD: str(contract.CANCELLATION_CHECK_PERIOD_MS),
    }
    text = (
        f'name: "{contract.MODEL_NAME}"\n'
        'backend: "python"\n'
        "max_batch_size: 0\n"
        f"model_transaction_policy {{\n  decoupled: {'true' if serving.streaming else 'false'}\n}}\n"
        "instance_group [\n  {\n    count: 1\n    kind: KIND_CPU\n  }\n]\n"
        + contract.io_block("input", contract.INPUTS)
        + contract.io_block("output", contract.OUTPUTS)
        + "".join(
            f'parameters: {{\n  key: "{key}"\n  value: {{ string_value: {_pbtxt_string(value)} }}\n}}\n'
            for key, value in parameters.items()
        )
    )
    if ttft_buckets_ms:
        from inference_platform.inference_image.model_metrics import model_metrics_block

        text += model_metrics_block(ttft_buckets_ms)
    return text


def render_repository(
    serving: ServingSettings,
    destination: Path,
    *,
    checkpoint_dir: Path,
    tokenizer_dir: Path | None = None,
    draft_dir: Path | None = None,
    host_memory_bytes: int | None = None,
    ttft_buckets_ms: tuple[float, ...] = (),
) -> list[str]:
    """Write the repository to ``destination`` (which must not exist); returns the model names."""
    if serving.backend != "tensorrtllm":
        raise RenderError([f"serving.backend {serving.backend}: the LLM-API repository serves tensorrtllm only"])
    args = render_model_yaml(
        serving,
        checkpoint_dir=checkpoint_dir,
        tokenizer_dir=tokenizer_dir,
        draft_dir=draft_dir,
        host_memory_bytes=host_memory_bytes,
    )
    config = render_config(serving, ttft_buckets_ms=ttft_buckets_ms)
    code = (resources.files(_PACKAGE) / CODE_FILE).read_text(encoding="utf-8")
    if destination.exists():
        raise RenderError([f"{destination} already exists; render into a new directory"])
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        model_dir = staging / contract.MODEL_NAME
        (model_dir / VERSION_DIR).mkdir(parents=True)
        (model_dir / "config.pbtxt").write_text(config, encoding="utf-8")
        (model_dir / VERSION_DIR / contract.LLM_CONFIG_FILE).write_text(
            yaml.safe_dump(args, sort_keys=False), encoding="utf-8"
        )
        (model_dir / VERSION_DIR / CODE_FILE).write_text(code, encoding="utf-8")
        label = f"TensorRT-LLM {release.TENSORRT_LLM_VERSION}"
        render_server_file(serving, model_dir, runtime=contract.MODEL_NAME, runtime_label=label)
        os.rename(staging, destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [contract.MODEL_NAME]


def render_pod_repository(
    serving: ServingSettings,
    destination: Path,
    *,
    models_dir: Path,
    host_memory_bytes: int | None,
    ttft_buckets_ms: tuple[float, ...],
) -> list[str]:
    """The repository as the GPU pod writes it: the verified artifacts at their places under ``models_dir``
    (``checkpoint``, ``tokenizer``, ``draft``). ``inferctl plan`` renders the same for reviewers."""
    return render_repository(
        serving,
        destination,
        checkpoint_dir=models_dir / "checkpoint",
        tokenizer_dir=models_dir / "tokenizer",
        draft_dir=models_dir / "draft" if serving.speculative.draft_model is not None else None,
        host_memory_bytes=host_memory_bytes,
        ttft_buckets_ms=ttft_buckets_ms,
    )


def container_memory_bytes(cgroup: Path = Path("/sys/fs/cgroup/memory.max")) -> int | None:
    """The container's memory limit (cgroup v2 ``memory.max``), None when unlimited or unreadable."""
    try:
        text = cgroup.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _pbtxt_string(value: str) -> str:
    """A protobuf text-format string literal (JSON's escapes are a subset protobuf accepts)."""
    return json.dumps(value, ensure_ascii=False)
