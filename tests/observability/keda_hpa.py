"""What KEDA and the HPA it creates recommend from a ScaledObject ``spec`` as rendered, by day or by night, with every
trigger reading: the shipped ``scalingModifiers.formula`` string run through KEDA v2.20.2's semantics
(inference_platform.planners.keda: castToFloatIfNecessary, expr-lang v1.17.8), not a Python restatement of it.

The ``day`` cron trigger reports its ``desiredReplicas`` inside its window and 0 outside (KEDA's cron scaler)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inference_platform.planners import keda


def readings(spec: Mapping[str, Any], totals: Mapping[str, float], *, day: bool) -> dict[str, keda.Reading]:
    out = {name: keda.ok(value) for name, value in totals.items()}
    for t in spec["triggers"]:
        if t["type"] == "cron":
            out[t["name"]] = keda.ok(keda.cron_value(t, inside=day))
    return out


def composite(spec: Mapping[str, Any], totals: Mapping[str, float], *, day: bool) -> float:
    """The formula's value for trigger totals ``totals`` (by trigger name) by day or by night."""
    value = keda.composite(spec, readings(spec, totals, day=day)).value
    assert value is not None
    return value


def recommendation(spec: Mapping[str, Any], totals: Mapping[str, float], *, day: bool, current: int) -> int:
    """The HPA's desired replica count (before its behaviour's rate limits and stabilisation)."""
    if not (spec.get("advanced") or {}).get("scalingModifiers"):
        wanted = max(
            keda.hpa_desired(current, totals[t["name"]] / max(current, 1), float(t["metadata"]["threshold"]))
            for t in spec["triggers"]
            if t["type"] == "prometheus"
        )
        return min(max(wanted, int(spec["minReplicaCount"])), int(spec["maxReplicaCount"]))
    found = keda.recommendation(spec, readings(spec, totals, day=day), current=current)
    assert found is not None
    return found
