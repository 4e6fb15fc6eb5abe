"""Output tensors of the LLM step for one response, shaped as TensorRT-LLM returns them (batch 1, beam 1)."""

from __future__ import annotations

import numpy as np
from inference_platform.inference_image.runtime.generation import Chunk, SequenceState

# Paged KV-cache block size the perf counters are expressed in (TensorRT-LLM's default tokens_per_block).
TOKENS_PER_BLOCK = 64


def output_arrays(chunk: Chunk, state: SequenceState) -> dict[str, np.ndarray]:
    """Every output the request asked for, as numpy arrays with the leading batch dimension."""
    tokens = np.asarray(chunk.tokens, dtype=np.int32).reshape(1, 1, len(chunk.tokens))
    out = {
        "output_ids": tokens,
        "sequence_length": np.array([[len(chunk.tokens)]], dtype=np.int32),
        "batch_index": np.zeros((1, 1), dtype=np.int32),
        "sequence_index": np.zeros((1, 1), dtype=np.int32),
    }
    request = state.request
    if request.return_log_probs:
        out["output_log_probs"] = np.asarray(chunk.log_probs, dtype=np.float32).reshape(1, 1, len(chunk.log_probs))
        out["cum_log_probs"] = np.array([[sum(state.log_probs)]], dtype=np.float32)
    if request.return_perf_metrics:
        timings = state.timings
        total = len(request.input_ids) + len(state.generated)
        blocks = -(-total // TOKENS_PER_BLOCK)
        out |= {
            "kv_cache_alloc_new_blocks": np.array([[blocks]], dtype=np.int32),
            "kv_cache_reused_blocks": np.zeros((1, 1), dtype=np.int32),
            "kv_cache_alloc_total_blocks": np.array([[blocks]], dtype=np.int32),
            "arrival_time_ns": np.array([[timings.arrival_ns]], dtype=np.int64),
            "first_scheduled_time_ns": np.array([[timings.first_scheduled_ns]], dtype=np.int64),
            "first_token_time_ns": np.array([[timings.first_token_ns]], dtype=np.int64),
            "last_token_time_ns": np.array([[timings.last_token_ns]], dtype=np.int64),
            "acceptance_rate": np.zeros((1, 1), dtype=np.float32),
            "total_accepted_draft_tokens": np.zeros((1, 1), dtype=np.int32),
            "total_draft_tokens": np.zeros((1, 1), dtype=np.int32),
        }
    return out
