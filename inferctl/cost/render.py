"""Text and JSON views of a cost estimate and of its delta against a base plan."""

from __future__ import annotations

from typing import Any

from inference_platform.catalog.prices import PRICE_DATE, SERVICE_SOURCE
from inference_platform.planners.costing import Estimate, Line


def _line_json(line: Line) -> dict[str, Any]:
    return {
        "urn": line.urn,
        "type": line.type,
        "area": line.area,
        "category": line.category,
        "status": line.status,
        "monthly_usd": {"min": line.monthly_min, "expected": line.monthly_expected, "max": line.monthly_max},
        "basis": line.basis,
    }


def estimate_json(e: Estimate) -> dict[str, Any]:
    return {
        "region": e.region,
        "price_date": PRICE_DATE,
        "price_source": SERVICE_SOURCE,
        "monthly_usd": {
            "min": round(e.monthly_min, 2),
            "expected": round(e.monthly_expected, 2),
            "max": round(e.monthly_max, 2),
        },
        "by_area": {k: _triple(v) for k, v in e.by("area").items()},
        "by_category": {k: _triple(v) for k, v in e.by("category").items()},
        "unknown": [{"urn": u.urn, "type": u.type, "basis": u.basis} for u in e.unknown],
        "resources": [_line_json(line) for line in e.lines if line.status != "free"],
        "free_resources": sum(1 for line in e.lines if line.status == "free"),
    }


def _triple(v: tuple[float, float, float]) -> dict[str, float]:
    return {"min": round(v[0], 2), "expected": round(v[1], 2), "max": round(v[2], 2)}


def delta_json(head: Estimate, base: Estimate) -> dict[str, Any]:
    areas = sorted(set(head.by("area")) | set(base.by("area")))
    h, b = head.by("area"), base.by("area")
    return {
        "monthly_usd_expected": {
            "base": round(base.monthly_expected, 2),
            "head": round(head.monthly_expected, 2),
            "delta": round(head.monthly_expected - base.monthly_expected, 2),
        },
        "by_area": {
            a: round(h.get(a, (0, 0, 0))[1] - b.get(a, (0, 0, 0))[1], 2)
            for a in areas
            if abs(h.get(a, (0, 0, 0))[1] - b.get(a, (0, 0, 0))[1]) >= 0.005
        },
    }


def money(v: float) -> str:
    return f"${v:,.0f}" if abs(v) >= 100 else f"${v:,.2f}"


def signed(v: float) -> str:
    return ("+" if v >= 0 else "-") + money(abs(v))


def text(head: Estimate, base: Estimate | None = None) -> str:
    lines = [
        f"Monthly cost estimate ({head.region}, prices of {PRICE_DATE}): expected {money(head.monthly_expected)} "
        f"(min {money(head.monthly_min)}, max {money(head.monthly_max)})",
        "",
        "  area                      min        expected             max",
    ]
    for area, (lo, mid, hi) in head.by("area").items():
        lines.append(f"  {area:<16}{money(lo):>14}{money(mid):>16}{money(hi):>16}")
    lines += ["", "  by category (expected):"]
    for cat, (_, mid, _) in sorted(head.by("category").items(), key=lambda kv: -kv[1][1]):
        lines.append(f"    {cat:<28}{money(mid):>14}")
    lines += ["", "  resources:"]
    for line in sorted((x for x in head.lines if x.status == "priced"), key=lambda x: -(x.monthly_expected or 0)):
        lines.append(
            f"    {money(line.monthly_expected or 0):>12}  {line.type.split(':')[-1]} {line.name}: {line.basis}"
        )
    if head.unknown:
        lines += ["", f"  UNKNOWN cost ({len(head.unknown)} resources, not counted):"]
        lines += [f"    {u.type} {u.name}: {u.basis}" for u in head.unknown]
    if base is not None:
        d = delta_json(head, base)
        lines += ["", f"  against base: {money(base.monthly_expected)} -> {money(head.monthly_expected)} "
                      f"({signed(d['monthly_usd_expected']['delta'])} a month)"]  # fmt: skip
        lines += [f"    {a}: {signed(v)}" for a, v in d["by_area"].items()]
    return "\n".join(lines)
