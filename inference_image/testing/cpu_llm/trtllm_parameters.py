"""TEST DOUBLE: the CPU stand-in reads the production ``tensorrt_llm`` parameters as the C++ backend would.

The stand-in loads the production-rendered config (only its backend line swapped), so it must read
every parameter only the C++ backend understands and check it rather than drop it. Rules follow
tensorrtllm_backend r25.05 ``inflight_batcher_llm/src/model_instance_state.cc`` and ``model_state.cc``:

- an empty value means "unset": the C++ numeric and boolean reads throw on it and fall back to the
  default, and the string reads treat it as absent;
- ``gpt_model_type``, ``tokenizer_dir``, ``guided_decoding_backend`` and ``xgrammar_tokenizer_info_path``
  are read with no fallback ("Cannot find parameter with name"): missing fails the load.

The stand-in is stricter than the backend on purpose: a key outside NVIDIA's list, a key of NVIDIA's
list that is missing, and a non-empty value the backend would silently replace by its default (a
misspelt policy, ``"ture"``) all fail the load, naming every problem at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from inference_platform.inference_image.model_repository.nvidia_keys import TENSORRT_LLM

INTEGER = frozenset(
    {
        "max_beam_width",
        "max_tokens_in_paged_kv_cache",
        "sink_token_length",
        "kv_cache_host_memory_bytes",
        "cancellation_check_period_ms",
        "stats_check_period_ms",
        "iter_stats_max_iterations",
        "request_stats_max_iterations",
        "num_nodes",
        "lora_cache_optimal_adapter_size",
        "lora_cache_max_adapter_size",
        "lora_cache_host_memory_bytes",
        "lookahead_window_size",
        "lookahead_ngram_size",
        "lookahead_verification_set_size",
        "cuda_graph_cache_size",
    }
)
FRACTION = frozenset({"kv_cache_free_gpu_mem_fraction", "cross_kv_cache_fraction", "lora_cache_gpu_memory_fraction"})
FLOAT = frozenset({"gpu_weights_percent"})
BOOLEAN = frozenset(
    {
        "kv_cache_onboard_blocks",
        "exclude_input_in_output",
        "enable_kv_cache_reuse",
        "normalize_log_probs",
        "enable_chunked_context",
        "enable_context_fmha_fp32_acc",
        "multi_block_mode",
        "cuda_graph_mode",
        "speculative_decoding_fast_logits",
    }
)
ENUM = {
    "FORCE_CPU_ONLY_INPUT_TENSORS": ("yes", "no"),
    "gpt_model_type": ("V1", "v1", "inflight_batching", "inflight_fused_batching"),
    "batch_scheduler_policy": ("max_utilization", "guaranteed_no_evict"),
    "decoding_mode": ("top_k", "top_p", "top_k_top_p", "beam_search", "medusa", "redrafter", "lookahead", "eagle"),
    "guided_decoding_backend": ("xgrammar",),
}
INT_LISTS = frozenset({"max_attention_window_size", "gpu_device_ids", "participant_ids"})
TREES = frozenset({"medusa_choices", "eagle_choices"})
PATHS = frozenset(
    {
        "gpt_model_path",
        "encoder_model_path",
        "lora_prefetch_dir",
        "executor_worker_path",
        "tokenizer_dir",
        "xgrammar_tokenizer_info_path",
    }
)
REQUIRED = ("gpt_model_type", "gpt_model_path", "tokenizer_dir")
"""Non-empty for the stand-in to run: the batching type, the engine and the tokenizer it echoes with."""
_TRUE = ("True", "true", "TRUE", "1")
_FALSE = ("False", "false", "FALSE", "0")
_CSV_INTS = re.compile(r"^\s*-?\d+(\s*,\s*-?\d+)*\s*$")


class ParameterError(ValueError):
    """The config's parameters would not serve as the production backend intends; lists every problem."""


@dataclass(frozen=True)
class TrtllmParameters:
    """What the stand-in uses of the production parameters (everything else is checked, then unused)."""

    engine_dir: Path
    tokenizer_dir: Path
    max_beam_width: int
    exclude_input_in_output: bool
    guided_decoding_backend: str
    decoding_mode: str
    raw: Mapping[str, str]


def read(model: str, raw: Mapping[str, str]) -> TrtllmParameters:
    """Check every parameter of ``model``'s config; raise one ParameterError naming all problems."""
    problems = [
        f"unknown parameter {key!r} (not in NVIDIA's r25.05 template)" for key in sorted(set(raw) - set(TENSORRT_LLM))
    ]
    problems += [f"missing parameter {key!r} (NVIDIA's template has it)" for key in TENSORRT_LLM if key not in raw]
    for key in TENSORRT_LLM:
        value = raw.get(key, "")
        if value == "":
            if key in REQUIRED:
                problems.append(f"parameter {key!r} is empty; the stand-in needs it")
            continue
        problem = _value_problem(key, value)
        if problem:
            problems.append(f"parameter {key!r}: {problem}")
    guided = raw.get("guided_decoding_backend", "")
    if guided and not raw.get("xgrammar_tokenizer_info_path"):
        # The C++ backend would silently run without guided decoding (it needs both).
        problems.append("guided_decoding_backend is set but xgrammar_tokenizer_info_path is empty")
    if raw.get("decoding_mode") == "lookahead" and not all(
        raw.get(k) for k in ("lookahead_window_size", "lookahead_ngram_size", "lookahead_verification_set_size")
    ):
        problems.append("decoding_mode lookahead needs the three lookahead_* parameters (the backend throws)")
    if problems:
        raise ParameterError(f"model {model}: " + "; ".join(problems))
    return TrtllmParameters(
        engine_dir=Path(raw["gpt_model_path"]),
        tokenizer_dir=Path(raw["tokenizer_dir"]),
        max_beam_width=int(raw["max_beam_width"] or 1),
        exclude_input_in_output=(raw["exclude_input_in_output"] or "false") in _TRUE,
        guided_decoding_backend=guided or "none",
        decoding_mode=raw["decoding_mode"],
        raw=dict(raw),
    )


def _value_problem(key: str, value: str) -> str | None:
    if key in INTEGER:
        if not re.fullmatch(r"\d+", value):
            return f"{value!r} is not a non-negative integer"
        return None
    if key in FRACTION or key in FLOAT:
        try:
            number = float(value)
        except ValueError:
            return f"{value!r} is not a number"
        if not 0.0 <= number <= 1.0:
            return f"{value!r} is outside 0-1"
        return None
    if key in BOOLEAN:
        return None if value in _TRUE + _FALSE else f"{value!r} is not one of {', '.join(_TRUE + _FALSE)}"
    if key in ENUM:
        return None if value in ENUM[key] else f"{value!r} is not one of {', '.join(ENUM[key])}"
    if key in INT_LISTS:
        groups = value.split(";") if key == "gpu_device_ids" or key == "participant_ids" else [value]
        return None if all(_CSV_INTS.match(group) for group in groups) else f"{value!r} is not comma-separated integers"
    if key in TREES:
        try:
            parse_choices(value)
        except ValueError as err:
            return str(err)
        return None
    if key in PATHS:
        return None if value.startswith("/") else f"{value!r} is not an absolute path"
    raise AssertionError(f"no rule for {key}")  # a new key in nvidia_keys needs a rule here


def parse_choices(text: str) -> list[list[int]]:
    """NVIDIA's text form of a draft tree, ``{0}, {0, 0}, {1}``, as paths; ValueError on anything else."""
    text = text.strip()
    if not text:
        return []
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError(f"expected {{i, j}}, {{k}} ..., got {text!r}")
    paths = []
    for part in text[1:-1].split("}"):
        part = part.strip().lstrip(",").strip().lstrip("{").strip()
        if not part:
            raise ValueError(f"empty path in {text!r}")
        paths.append([int(i) for i in part.split(",")])
    return paths
