"""What KEDA and the HPA it creates recommend from a ScaledObject ``spec`` as rendered: the shipped
``scalingModifiers.formula`` string evaluated (tests/observability/expr_lang.py) on the trigger values,
not a Python restatement of it.

KEDA hands the formula each trigger's value by trigger name; the ``day`` cron trigger reports its
``desiredReplicas`` inside its window and 1 outside (KEDA's cron scaler default). The composite metric
is an ``AverageValue`` against ``scalingModifiers.target``; without a formula every trigger is its own
metric and the HPA takes the largest recommendation. Either way the HPA applies its tolerance, then
clamps to ``minReplicaCount``/``maxReplicaCount``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inference_platform.components.autoscaling.scaled_object import hpa_desired
from tests.observability.expr_lang import evaluate

CRON_OUTSIDE_WINDOW = 1


def composite(spec: Mapping[str, Any], totals: Mapping[str, float], *, day: bool) -> float:
    """The formula's value for trigger totals ``totals`` (by trigger name) by day or by night."""
    cron = {t["name"]: t for t in spec["triggers"] if t["type"] == "cron"}
    variables = {name: float(value) for name, value in totals.items()}
    for name, trigger in cron.items():
        variables[name] = float(trigger["metadata"]["desiredReplicas"]) if day else CRON_OUTSIDE_WINDOW
    return float(evaluate(spec["advanced"]["scalingModifiers"]["formula"], variables))


def recommendation(spec: Mapping[str, Any], totals: Mapping[str, float], *, day: bool, current: int) -> int:
    """The HPA's desired replica count (before its behaviour's rate limits and stabilisation)."""
    modifiers = spec["advanced"].get("scalingModifiers")
    if modifiers:
        value = composite(spec, totals, day=day)
        wanted = hpa_desired(current, value / max(current, 1), float(modifiers["target"]))
    else:
        wanted = max(
            hpa_desired(current, totals[t["name"]] / max(current, 1), float(t["metadata"]["threshold"]))
            for t in spec["triggers"]
            if t["type"] == "prometheus"
        )
    return min(max(wanted, int(spec["minReplicaCount"])), int(spec["maxReplicaCount"]))
