"""Grafana dashboards as code (grafana-foundation-sdk builders), delivered as sidecar ConfigMaps.

``DASHBOARDS`` maps each dashboard's file name to its builder; :func:`render` gives the JSON model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inference_platform.components.observability.dashboards import cost, edge, fleet, serving
from inference_platform.components.observability.dashboards.panels import expand, queries, to_json

DASHBOARDS: dict[str, Callable[[], Any]] = {
    "inference-serving.json": serving.build,
    "inference-accelerators.json": fleet.build,
    "inference-edge.json": edge.build,
    "inference-cost.json": cost.build,
}


def render() -> dict[str, dict[str, Any]]:
    """Every dashboard's JSON model, by file name."""
    return {name: to_json(build()) for name, build in DASHBOARDS.items()}


__all__ = ["DASHBOARDS", "expand", "queries", "render"]
