"""Planning factors: the figures a capacity plan assumes that a cluster can measure, each labelled
``modelled`` (an assumption with its basis) or ``measured`` (what verification saw, with where).

Pure data, no Pulumi. The planner (``latency``/``capacity``) reads one ``PlanningFactors``; nothing in it
is a hidden constant: the defaults below are the planner's stated assumptions, and ``inferctl capacity
calibrate`` replaces fields with measured values (``Factor.measured``) and writes them as JSON
(``to_json``/``from_json``), which ``capacity plan --factors FILE`` reads back.

Fields
- ``throughput_scale``: measured / predicted output tokens/s per replica at the planned batch (1.0: the
  roofline as calibrated on published results).
- ``ttft_scale``, ``itl_scale``: measured / predicted time to first token and inter-token latency.
- ``speculative_acceptance``: probability a draft token is accepted (per position, i.i.d.), so a step
  with ``k`` draft tokens emits ``(1 - a^(k+1)) / (1 - a)`` tokens on average (Leviathan et al. 2023,
  "Fast Inference from Transformers via Speculative Decoding", eq. 1). Default 0.6: the Medusa-2 and
  EAGLE papers report 2-3.5 accepted tokens per step on chat benchmarks (MT-bench) with 4-5 drafts,
  i.e. a = 0.55-0.75; 0.6 is the low end, as a plan should be.
- ``prefix_hit_rate``: share of input tokens found in the KV cache (``serving.kvCache.enableReuse``), so
  they skip prefill. Default 0.2: a shared system prompt of a few hundred tokens in front of
  1,000-token prompts; chat with multi-turn history reuses far more, one-shot batch jobs none. Only
  applied when the stack turns reuse on.
- ``cached_input_price_fraction``: what a cached input token sells for, as a share of the input price
  (providers bill prompt-cache hits at 10-50 % of the input price; default 1.0 = no discount, so a
  margin is never flattered by an assumed discount).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields, replace
from typing import Any, Final, Literal

Source = Literal["modelled", "measured"]
SOURCES: Final = ("modelled", "measured")


@dataclass(frozen=True, kw_only=True)
class Factor:
    """One planning figure, where it comes from, and why it has this value."""

    value: float
    source: Source = "modelled"
    basis: str = ""
    """Modelled: the assumption and its reference. Measured: the file, stack and date it came from."""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {self.source!r}")

    @classmethod
    def measured(cls, value: float, basis: str) -> Factor:
        return cls(value=value, source="measured", basis=basis)


SCALE_RANGE: Final = (0.05, 20.0)
"""A measured / predicted ratio: beyond 20x either way the roofline is not what is being corrected (a
wrong instance type, a broken run, a unit slip), and the plan built on it would be fiction."""
SHARE_RANGE: Final = (0.0, 0.99)
"""A probability or hit rate: 1 would make the speculative-step formula divide by zero (every draft
accepted) or prefill free."""
FRACTION_RANGE: Final = (0.0, 1.0)
"""A price share: a cached token sells for at most the full input price."""

RANGES: Final[dict[str, tuple[float, float]]] = {
    # name: (lower, upper), both inclusive
    "throughput_scale": SCALE_RANGE,
    "ttft_scale": SCALE_RANGE,
    "itl_scale": SCALE_RANGE,
    "speculative_acceptance": SHARE_RANGE,
    "prefix_hit_rate": SHARE_RANGE,
    "cached_input_price_fraction": FRACTION_RANGE,
}
BASIS_MAX_CHARS: Final = 400
"""A factor's ``basis`` is one printable line (it is shown in plans and written into stack files)."""


def basis_problem(basis: str) -> str | None:
    """Why ``basis`` is not one short printable line, or None."""
    if len(basis) > BASIS_MAX_CHARS:
        return f"expected at most {BASIS_MAX_CHARS} characters, got {len(basis)}"
    bad = next((ch for ch in basis if not ch.isprintable()), None)
    if bad is not None:
        return f"expected one printable line; it holds {bad!r}"
    return None


def one_line(text: str) -> str:
    """``text`` made a valid basis: control characters become spaces, and it is cut to the limit."""
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= BASIS_MAX_CHARS else flat[: BASIS_MAX_CHARS - 3] + "..."


@dataclass(frozen=True, kw_only=True)
class PlanningFactors:
    throughput_scale: Factor = Factor(value=1.0, basis="roofline calibrated on published results")
    ttft_scale: Factor = Factor(value=1.0, basis="roofline calibrated on published results")
    itl_scale: Factor = Factor(value=1.0, basis="roofline calibrated on published results")
    speculative_acceptance: Factor = Factor(
        value=0.6, basis="low end of Medusa-2/EAGLE papers' MT-bench acceptance (0.55-0.75 per draft token)"
    )
    prefix_hit_rate: Factor = Factor(
        value=0.2, basis="assumed: shared system prompt of ~200 of 1,000 input tokens (kvCache.enableReuse)"
    )
    cached_input_price_fraction: Factor = Factor(value=1.0, basis="assumed: cached input sold at the full input price")

    def __post_init__(self) -> None:
        problems = []
        for f in fields(self):
            factor = getattr(self, f.name)
            if not isinstance(factor, Factor):
                problems.append(f"{f.name}: expected a Factor, got {type(factor).__name__}")
                continue
            low, high = RANGES[f.name]
            value = factor.value
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                problems.append(f"{f.name}: got {value!r}; expected a finite number")
            elif not low <= value <= high:
                problems.append(f"{f.name}: got {value:g}; expected a value in [{low:g}, {high:g}]")
            basis = basis_problem(factor.basis) if isinstance(factor.basis, str) else "expected a string"
            if basis is not None:
                problems.append(f"{f.name}.basis: {basis}")
        if problems:
            raise ValueError("; ".join(problems))

    def with_measured(self, basis: str, **values: float) -> PlanningFactors:
        """A copy with the named fields replaced by measured values from ``basis``."""
        unknown = sorted(set(values) - {f.name for f in fields(self)})
        if unknown:
            raise ValueError(f"unknown planning factors: {', '.join(unknown)}")
        return replace(self, **{k: Factor.measured(v, basis) for k, v in values.items()})

    def measured_fields(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self) if getattr(self, f.name).source == "measured")

    def to_dict(self) -> dict[str, Any]:
        return {
            f.name: {"value": getattr(self, f.name).value, "source": getattr(self, f.name).source,
                     "basis": getattr(self, f.name).basis}
            for f in fields(self)
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanningFactors:
        """Fields missing from ``data`` keep their modelled defaults; unknown ones are refused."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown planning factors: {', '.join(unknown)}")
        out: dict[str, Factor] = {}
        for name, item in data.items():
            if not isinstance(item, dict) or "value" not in item:
                raise ValueError(f"{name}: expected {{'value': number, 'source': ..., 'basis': ...}}, got {item!r}")
            value = item["value"]
            # A number, not what float() makes of one: "1.2", true and "inf" are not factors.
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name}.value: expected a number, got {value!r}")
            value = float(value)
            out[name] = Factor(value=value, source=item.get("source", "modelled"), basis=str(item.get("basis", "")))
        return cls(**out)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> PlanningFactors:
        return cls.from_dict(json.loads(text))


DEFAULT_FACTORS: Final = PlanningFactors()


def speculative_tokens_per_step(draft_tokens: int, acceptance: float) -> float:
    """Expected tokens one verification step emits with ``draft_tokens`` drafts (1 without drafts)."""
    if draft_tokens <= 0 or acceptance <= 0:
        return 1.0
    return (1 - acceptance ** (draft_tokens + 1)) / (1 - acceptance)
