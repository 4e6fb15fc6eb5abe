"""One OpenAI API, two runtimes: which serving features each backend's runtime path has.

Clients see the same routes, request fields and response shapes on GPUs and on Neuron (the OpenAI server in
``inference_image/openai_api`` fronts both); what differs is which engine features a stack may turn on. The
GPU path is TensorRT-LLM's PyTorch LLM API behind Triton (every feature below is an ``LLM()`` argument at the
pinned release: h4a's pin and schema data); the Neuron path is our ``neuron_llm`` Triton model over NxD
Inference, which compiles one static batch shape and decodes it token by token
(``inference_image/runtime/neuron_engine.py``): it has no in-flight batching and therefore none of the features
built on it. The serving settings refuse a feature on a backend that lacks it, naming the key
(``settings/serving.py``; tests/catalog/test_serving_features.py holds the two in step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

BACKENDS: Final = ("tensorrtllm", "neuron")


@dataclass(frozen=True)
class Feature:
    name: str
    key: str
    """The setting that turns it on (camelCase path under the stack's config)."""
    enable: dict[str, Any]
    """A serving-section fragment that turns it on (what a stack writes)."""
    backends: frozenset[str]
    why_not: str = ""
    """Why the backends without it lack it (shown in docs/serving.md)."""


STATIC_BATCH = "the Neuron path compiles one static batch and decodes it in lock-step (no in-flight batching)"

FEATURES: Final[tuple[Feature, ...]] = (
    Feature("multi-node (LeaderWorkerSet + MPI)", "serving.nodes", {"nodes": 2, "tensorParallel": 16}, frozenset({"tensorrtllm"}),
            "the Neuron image serves from one node (no MPI world in its Triton path)"),
    Feature("speculative decoding", "serving.speculative.method", {"speculative": {"method": "ngram", "maxDraftLen": 4}},
            frozenset({"tensorrtllm"}), "neuron_llm drives NxD Inference without a draft/speculation loop"),
    Feature("structured output (response_format json_object / json_schema)", "serving.guidedDecoding.backend",
            {"guidedDecoding": {"backend": "xgrammar"}}, frozenset({"tensorrtllm"}),
            "NxD Inference's on-device sampler has no grammar mask; the server refuses response_format with a 400"),
    Feature("KV-cache reuse across requests", "serving.kvCache.enableReuse", {"kvCache": {"enableReuse": True}},
            frozenset({"tensorrtllm"}), STATIC_BATCH),
    Feature("host-memory KV-cache tier", "serving.kvCache.hostCacheFraction",
            {"kvCache": {"hostCacheFraction": 0.2, "enableReuse": True}}, frozenset({"tensorrtllm"}), STATIC_BATCH),
    Feature("chunked prefill", "serving.kvCache.enableChunkedContext", {"kvCache": {"enableChunkedContext": True}},
            frozenset({"tensorrtllm"}), STATIC_BATCH),
    Feature("overlap (async) scheduler", "serving.batching.overlapScheduler", {"batching": {"overlapScheduler": True}},
            frozenset({"tensorrtllm"}), STATIC_BATCH),
    Feature("capacity scheduler policy max_utilization", "serving.batching.schedulerPolicy",
            {"batching": {"schedulerPolicy": "max_utilization"}}, frozenset({"tensorrtllm"}), STATIC_BATCH),
    Feature("beam search", "serving.maxBeamWidth", {"maxBeamWidth": 2}, frozenset({"tensorrtllm"}),
            "neuron_llm samples one sequence per request"),
)  # fmt: skip
"""Engine features a stack turns on. Request features (chat template, streaming, stop, max_tokens,
temperature/top_p/seed, usage) are the OpenAI server's and exist on both."""

NEURON_BASELINE: Final = {"backend": "neuron", "kvCache": {"enableReuse": False, "enableChunkedContext": False}}
"""A Neuron serving section with every feature off (the settings default reuse and chunked prefill on)."""


def unsupported(backend: str) -> tuple[Feature, ...]:
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    return tuple(f for f in FEATURES if backend not in f.backends)


def matrix_markdown() -> str:
    """The table docs/serving.md shows (a test keeps the page equal to it)."""
    rows = ["| feature | setting | GPU (TensorRT-LLM) | Neuron | why not on Neuron |", "|---|---|---|---|---|"]
    for f in FEATURES:
        marks = ["yes" if b in f.backends else "refused" for b in BACKENDS]
        rows.append(
            f"| {f.name} | `{f.key}` | {marks[0]} | {marks[1]} | {f.why_not if 'neuron' not in f.backends else ''} |"
        )
    return "\n".join(rows)
