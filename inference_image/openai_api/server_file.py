"""The OpenAI server's own settings, rendered beside the model it fronts: ``<model dir>/openai_server.json``.

The model repository renderers (``llmapi/repository.py``, ``neuron/repository.py``) write it from the stack's serving
settings, so the pod, ``inferctl serve-local`` and the tests configure the server from one place, as they configure
the model. It holds what the server needs and the model files do not say:

- ``runtime``: which engine answers (``TensorRT-LLM 1.2.1`` or ``NxD Inference``): the request fields each honours
  differ (``fields.py``), and a client is told which runtime refused or ignored one;
- ``guidedDecoding``: whether the engine has a grammar backend, and the limits every guide is checked against
  (``guides.py``; settings ``serving.guidedDecoding.limits``);
- ``ttftBucketsSeconds``: the time-to-first-token histogram's buckets, the stack's SLOs among them, so the SLO alert
  reads an exact bucket (components/observability/rules.py).

A model directory without the file (a hand-made one) gets the defaults below.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SERVER_FILE = "openai_server.json"
TENSORRT_LLM = "tensorrt_llm"
NEURON = "neuron_llm"
DEFAULT_TTFT_BUCKETS_S = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    160.0, 640.0, 2560.0,
)  # fmt: skip
"""vLLM's ``vllm:time_to_first_token_seconds`` buckets (``vllm/v1/metrics/loggers.py``)."""


@dataclass(frozen=True, kw_only=True)
class GuideLimits:
    """settings/serving.py ``GuidedDecodingLimits``, as the server reads them (its docstrings say why each)."""

    schema_bytes: int = 262_144
    depth: int = 10
    properties: int = 5_000
    enum_values: int = 1_000
    string_length: int = 128
    array_items: int = 128
    pattern_chars: int = 1_000
    tools: int = 128
    compile_seconds: float = 5.0
    compile_memory_mib: int = 1_024


@dataclass(frozen=True, kw_only=True)
class ServerFile:
    runtime: str = TENSORRT_LLM
    """The Triton model the server calls: ``tensorrt_llm`` (TensorRT-LLM's LLM API) or ``neuron_llm``."""
    runtime_label: str = "TensorRT-LLM 1.2.1"
    """How refusals and warnings name the runtime."""
    guided_backend: str = "none"
    """serving.guidedDecoding.backend: ``none`` refuses every guide (response_format, forced tools)."""
    guide_limits: GuideLimits = field(default_factory=GuideLimits)
    ttft_buckets_s: tuple[float, ...] = DEFAULT_TTFT_BUCKETS_S

    def to_json(self) -> str:
        data = asdict(self)
        data["ttft_buckets_s"] = list(self.ttft_buckets_s)
        return json.dumps(data, indent=2) + "\n"


def render_server_file(serving: Any, model_dir: Path, *, runtime: str, runtime_label: str) -> ServerFile:
    """Write ``<model_dir>/openai_server.json`` for ``serving`` (settings/serving.py ``ServingSettings``)."""
    limits = serving.guided_decoding.limits
    slo_buckets = {serving.slo.ttft_p50_ms / 1000, serving.slo.ttft_p95_ms / 1000}
    server = ServerFile(
        runtime=runtime,
        runtime_label=runtime_label,
        guided_backend=serving.guided_decoding.backend,
        guide_limits=GuideLimits(**limits.model_dump()),
        ttft_buckets_s=tuple(sorted(set(DEFAULT_TTFT_BUCKETS_S) | slo_buckets)),
    )
    (model_dir / SERVER_FILE).write_text(server.to_json(), encoding="utf-8")
    return server


def read_server_file(model_dir: Path) -> ServerFile:
    """The rendered file, or the defaults when the model directory has none; ValueError naming a bad key."""
    path = model_dir / SERVER_FILE
    if not path.is_file():
        return ServerFile(runtime=model_dir.name if model_dir.name in (TENSORRT_LLM, NEURON) else TENSORRT_LLM)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        limits = GuideLimits(**data.pop("guide_limits", {}))
        buckets = tuple(float(b) for b in data.pop("ttft_buckets_s", DEFAULT_TTFT_BUCKETS_S))
        return ServerFile(guide_limits=limits, ttft_buckets_s=buckets, **data)
    except (OSError, ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from None
