"""GPU utilisation during the load, from Prometheus's HTTP API (DCGM exporter series).

``DCGM_FI_DEV_GPU_UTIL`` is a 0-100 gauge per GPU; the check averages it over the GPUs serving the
stack and over the load's window. An unreachable Prometheus or no series is "not measured", which the
verdict reports without failing (a missing monitoring stack must not block a rollout).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

GPU_UTIL_METRIC = "DCGM_FI_DEV_GPU_UTIL"
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class GpuUtilization:
    value: float | None
    """Mean utilisation 0-1, or None when not measured."""
    query: str
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "query": self.query, "note": self.note}


def utilization_query(window_s: int, selector: str = "") -> str:
    inner = f"{GPU_UTIL_METRIC}{{{selector}}}" if selector else GPU_UTIL_METRIC
    return f"avg(avg_over_time({inner}[{max(1, window_s)}s])) / 100"


def gpu_utilization(base_url: str, *, window_s: int, at: float, selector: str = "") -> GpuUtilization:
    """Mean GPU utilisation over the ``window_s`` seconds before ``at`` (epoch seconds)."""
    query = utilization_query(window_s, selector)
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": query, "time": f"{at:.3f}"})
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            payload = json.loads(response.read())
    except (urllib.error.URLError, OSError, json.JSONDecodeError) as err:
        return GpuUtilization(None, query, f"Prometheus not reachable at {base_url}: {err}")
    if payload.get("status") != "success":
        return GpuUtilization(None, query, f"Prometheus refused the query: {payload.get('error', payload)}")
    result = payload.get("data", {}).get("result", [])
    if not result:
        return GpuUtilization(None, query, f"no {GPU_UTIL_METRIC} series in the window (no DCGM exporter?)")
    value = float(result[0]["value"][1])
    if math.isnan(value):
        return GpuUtilization(None, query, "the query returned NaN")
    return GpuUtilization(value, query, "")
