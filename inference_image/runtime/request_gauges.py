"""Request gauges of a Python-backend LLM step, published through Triton's custom-metrics API.

The autoscaler (inference_platform.components.autoscaling) scales on requests in flight per replica: ``active`` (in the
running batch) plus ``waiting`` (queued for a batch slot), with ``max`` the batch size. NVIDIA's
TensorRT-LLM backend publishes these as ``nv_trt_llm_request_metrics``; the Neuron step has no such
backend, so it publishes the same ``request_type`` values under its own family,
``neuron_llm_request_metrics``, labelled ``model`` and ``version`` like Triton's own metrics.
"""

from __future__ import annotations

import threading
from typing import Any

NEURON_FAMILY = "neuron_llm_request_metrics"
TRT_LLM_FAMILY = "nv_trt_llm_request_metrics"
"""What the C++ TensorRT-LLM backend published and the autoscaler and alerts read
(components/observability/promql.py TRT_LLM_REQUESTS); the LLM-API model (inference_image/llmapi/model.py)
publishes it itself, since TensorRT-LLM's Python LLM API publishes no Triton metrics."""


class RequestGauges:
    """``<family>{request_type=active|max|waiting, model, version}``, set on every change; with ``engine_types`` (the
    LLM-API model: ``scheduled``, ``context``) also those, set from the engine's iteration stats."""

    def __init__(
        self,
        pb_utils: Any,
        *,
        family: str,
        model: str,
        version: str,
        max_active: int,
        engine_types: tuple[str, ...] = (),
    ) -> None:
        labels = {"model": model, "version": version}
        # The family must outlive its metrics (the backend refuses the other order): keep it.
        self._family = pb_utils.MetricFamily(
            name=family, description="LLM step requests (active, max, waiting)", kind=pb_utils.MetricFamily.GAUGE
        )
        self._metrics = {
            t: self._family.Metric(labels={"request_type": t, **labels})
            for t in ("active", "max", "waiting", *engine_types)
        }
        # Metric calls are messages to the server over one channel: one at a time.
        self._lock = threading.Lock()
        with self._lock:
            self._metrics["max"].set(max_active)
            for request_type in engine_types:
                self._metrics[request_type].set(0)
        self.update(0, 0)

    def update(self, waiting: int, active: int) -> None:
        with self._lock:
            self._metrics["waiting"].set(waiting)
            self._metrics["active"].set(active)

    def update_engine(self, values: dict[str, float]) -> None:
        """The engine-reported request counts (request types given as ``engine_types``)."""
        with self._lock:
            for request_type, value in values.items():
                self._metrics[request_type].set(value)
