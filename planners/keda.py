"""What KEDA v2.20.2 and the HPA it creates do with a ScaledObject ``spec`` as rendered: the composite metric of
``advanced.scalingModifiers`` when triggers fail, and the replica count the HPA then asks for. Pure, no Pulumi.

Each rule is read at kedacore/keda v2.20.2 (68a5b502) and pinned in tests/data/upstream/keda_v2.20.2_fallback.json:

- **A trigger's read** (pkg/scalers/prometheus_scaler.go ``ExecutePromQuery``): an empty result, an empty value list
  or NaN/Inf is 0 with no error while ``ignoreNullValues`` is true (its default), an error when it is "false".
  The cron scaler (pkg/scalers/cron_scaler.go) reports ``desiredReplicas`` inside its window and 0 outside.
- **Failures are counted per metric** (pkg/fallback/fallback.go ``GetMetricsWithFallback``): only with a valid
  fallback (``HasValidFallback``: failureThreshold >= 0, replicas >= 0 and, with modifiers, ``scalingModifiers
  .target`` parsing as an integer > 0). Until the count exceeds ``failureThreshold`` the error passes through.
  Above it, ``behavior: scalingModifiers`` hands the formula a placeholder that it reads as ``nil``
  (pkg/scaling/modifiers/formula.go ``scalingModifierTriggerValue``); any other behaviour replaces the metric by
  the fallback's and marks the fallback active.
- **The composite** (pkg/scaling/scale_handler.go ``GetScaledObjectMetrics``): any error without an active fallback
  fails the whole metric ("metric:... encountered error"), so the HPA gets none and holds the replica count in both
  directions. With an active fallback the formula is *not* evaluated (formula.go ``HandleScalingModifiers``): the
  first fallback value is the composite, which bypasses every clamp the formula applies (a night ceiling).
  Otherwise the formula runs (``expr.Run``) on the trigger values by trigger name; a run error leaves no metric; a
  ``nil`` result becomes ``fallback.replicas x target``.
- **The formula KEDA runs** is the rendered one after ``castToFloatIfNecessary`` (apis/keda/v1alpha1/
  scaledobject_webhook.go): wrapped in ``float(...)``, or with ``??`` in ``let _kedaCompositeResult = (...);
  _kedaCompositeResult == nil ? nil : float(_kedaCompositeResult)``. The admission webhook compiles and runs it with
  every named non-cpu/memory trigger at -1.0 (``validateScalingModifiersFormula``) and refuses a formula that fails.
- **The HPA** on the composite (an ``AverageValue`` external metric): ``ceil(current x value / current / target)``,
  unchanged within its 10 % tolerance, then ``minReplicaCount``/``maxReplicaCount``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inference_platform.planners.expr_lang import ExprError, compile_formula

KEDA_VERSION = "v2.20.2"
HPA_TOLERANCE = 0.1
"""The HPA controller's default tolerance: no change while |ratio - 1| <= 10 %."""
FALLBACK_BEHAVIORS = ("static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower",
                      "scalingModifiers")  # fmt: skip
RESOURCE_TRIGGERS = ("cpu", "memory")


@dataclass(frozen=True)
class Reading:
    """One trigger's read at one poll: its value, or None when the scaler errors, and the consecutive failures of its
    metric counted so far, this read included (fallback.go ``IncrementFailure``; a success resets it to 0)."""

    value: float | None
    failures: int = 0

    @property
    def failed(self) -> bool:
        return self.value is None


def ok(value: float) -> Reading:
    return Reading(float(value))


def failing(failures: int) -> Reading:
    return Reading(None, failures)


def prometheus_read(result: list[float] | None, *, ignore_null_values: bool) -> float | None:
    """A Prometheus trigger's value for an instant vector of ``result`` values (None: no series), as the scaler reads
    it: None when it errors."""
    if not result:
        return 0.0 if ignore_null_values else None
    if len(result) > 1:
        return None  # "returned multiple elements"
    value = result[0]
    if math.isnan(value) or math.isinf(value):
        return 0.0 if ignore_null_values else None
    return value


def cast_to_float_if_necessary(formula: str) -> str:
    """scaledobject_webhook.go ``castToFloatIfNecessary``, verbatim."""
    if "??" in formula:
        if formula.startswith("let _kedaCompositeResult = "):
            return formula
        return (
            f"let _kedaCompositeResult = ({formula}); _kedaCompositeResult == nil ? nil : float(_kedaCompositeResult)"
        )
    if formula.startswith("float("):
        return formula
    return f"float({formula})"


def _modifiers(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return (spec.get("advanced") or {}).get("scalingModifiers") or {}


def _named_triggers(spec: Mapping[str, Any]) -> list[str]:
    return [
        str(t["name"]) for t in spec.get("triggers") or [] if t.get("type") not in RESOURCE_TRIGGERS and t.get("name")
    ]


def admission_problems(spec: Mapping[str, Any]) -> list[str]:
    """What the v2.20.2 admission webhook refuses in ``spec`` (scaledobject_webhook.go ``ValidateAndCompile
    ScalingModifiers``, the scalingModifiers fallback check, types ``CheckFallbackValid``)."""
    out = []
    mods = _modifiers(spec)
    fallback = spec.get("fallback")
    if mods:
        formula = str(mods.get("formula") or "")
        if not formula:
            out.append("error ScalingModifiers.Formula is mandatory")
        elif not mods.get("target"):
            out.append("formula is given but target is empty")
        else:
            names = _named_triggers(spec)
            try:
                compile_formula(cast_to_float_if_necessary(formula), frozenset(names)).run(dict.fromkeys(names, -1.0))
            except ExprError as err:
                out.append(f"error validating formula in ScalingModifiers: {err}")
            try:
                target = float(str(mods["target"]))
            except ValueError:
                target = 0.0
            if target <= 0:
                out.append("error validating target in ScalingModifiers")
    if fallback is not None:
        if int(fallback.get("failureThreshold", 0)) < 0 or int(fallback.get("replicas", 0)) < 0:
            out.append("FailureThreshold & Replicas must both be greater than or equal to 0")
        behavior = fallback.get("behavior", "static")
        if behavior not in FALLBACK_BEHAVIORS:
            out.append(f"fallback.behavior {behavior!r} is not one of {', '.join(FALLBACK_BEHAVIORS)}")
        if behavior == "scalingModifiers" and not (mods and mods.get("formula")):
            out.append("scalingModifiers fallback behavior requires scalingModifiers.formula to be defined")
    return out


def has_valid_fallback(spec: Mapping[str, Any]) -> bool:
    """fallback.go ``HasValidFallback`` (with modifiers, the target must parse as an integer > 0)."""
    fallback = spec.get("fallback")
    if fallback is None:
        return False
    mods = _modifiers(spec)
    modifier_ok = True
    if mods:
        try:
            modifier_ok = int(str(mods.get("target", ""))) > 0
        except ValueError:
            modifier_ok = False
    return int(fallback.get("failureThreshold", 0)) >= 0 and int(fallback.get("replicas", 0)) >= 0 and modifier_ok


@dataclass(frozen=True)
class Composite:
    """The composite metric at one poll: ``value`` (None: the HPA gets no metric and holds), and why."""

    value: float | None
    why: str


def composite(spec: Mapping[str, Any], readings: Mapping[str, Reading], *, current_replicas: int = 0) -> Composite:
    """The ``composite-metric`` the HPA reads for ``spec`` when its triggers read ``readings`` (by trigger name)."""
    mods = _modifiers(spec)
    if not mods:
        raise ValueError("composite() judges a ScaledObject with scalingModifiers")
    fallback = spec.get("fallback")
    valid = has_valid_fallback(spec)
    threshold = int(fallback.get("failureThreshold", 0)) if fallback else 0
    behavior = str(fallback.get("behavior", "static")) if fallback else ""
    target = float(str(mods["target"]))
    data: dict[str, Any] = {}
    errors, fallback_values = [], []
    for name in _named_triggers(spec):
        reading = readings[name]
        if not reading.failed:
            data[name] = reading.value
            continue
        if not valid or reading.failures <= threshold:
            errors.append(name)
            continue
        if behavior == "scalingModifiers":
            data[name] = None  # the -1 placeholder, read as nil (formula.go scalingModifierTriggerValue)
            continue
        assert fallback is not None  # has_valid_fallback(spec) holds
        static = float(fallback["replicas"])
        replicas = static
        if behavior == "currentReplicas":
            replicas = float(current_replicas)
        elif behavior == "currentReplicasIfHigher":
            replicas = max(float(current_replicas), static)
        elif behavior == "currentReplicasIfLower":
            replicas = min(float(current_replicas), static)
        fallback_values.append(replicas * target)
    if errors and not fallback_values:
        return Composite(None, f"{', '.join(errors)} failing at or below failureThreshold (or without a valid "
                               "fallback): the composite metric errors and the HPA holds")  # fmt: skip
    if fallback_values:
        return Composite(fallback_values[0], f"fallback {behavior!r} active: the formula is not evaluated")
    try:
        program = compile_formula(cast_to_float_if_necessary(str(mods["formula"])), frozenset(data))
        value = program.run(data)
    except ExprError as err:
        return Composite(None, f"the formula fails at run time ({err}): no metric")
    if value is None:
        if fallback is None:
            return Composite(None, "the formula is nil and there is no fallback: no metric")
        return Composite(float(fallback["replicas"]) * target, "the formula is nil: fallback.replicas x target")
    return Composite(float(value), "formula")


def hpa_desired(current: int, value: float, target: float, tolerance: float = HPA_TOLERANCE) -> int:
    """The HPA's recommendation for one AverageValue metric: ceil(current x per-replica value / target).

    ``value`` is the per-replica average (the metric's total / current); within the tolerance the current count
    stands."""
    if current <= 0:
        return math.ceil(value / target) if value > 0 else 0
    ratio = value / target
    if abs(ratio - 1) <= tolerance:
        return current
    return math.ceil(current * ratio)


def recommendation(spec: Mapping[str, Any], readings: Mapping[str, Reading], *, current: int) -> int | None:
    """The replicas the HPA KEDA creates asks for (before its behaviour's rate limits and stabilisation), or None
    when it gets no metric and holds ``current``."""
    mods = _modifiers(spec)
    c = composite(spec, readings, current_replicas=current)
    if c.value is None:
        return None
    wanted = hpa_desired(current, c.value / max(current, 1), float(str(mods["target"])))
    return min(max(wanted, int(spec["minReplicaCount"])), int(spec["maxReplicaCount"]))


def cron_value(trigger: Mapping[str, Any], *, inside: bool) -> float:
    """The cron scaler's value: ``desiredReplicas`` inside its window, 0 outside (cron_scaler.go)."""
    return float(trigger["metadata"]["desiredReplicas"]) if inside else 0.0
