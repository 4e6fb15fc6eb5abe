"""The routing benchmark's delta in the pull request's comment (issue 29): the head's replay of the recorded trace
(``python -m bench routing``, ``build/bench/routing.json``) beside the base branch's, per routing mode and part.

The preview workflow runs both only when the change touches routing (``bench/routing-paths.txt``). The hit rate is the
engines' own count and repeats run to run; latency and throughput are one run's on a shared runner, so the comment
shows them as ratios beside the hit rate and never fails the check on them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError

PARTS = {"shared": "shared prefix", "hot": "hot prefix", "control": "no shared prefix"}


def read_report(path: Path, flag: str) -> dict[str, Any]:
    """The benchmark's JSON report, or one clear error naming the flag and the file."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CommandError(f"{flag}: cannot read the routing benchmark report {path}: {err}", exit_code=2) from None
    modes = report.get("modes") if isinstance(report, dict) else None
    if not isinstance(modes, dict) or not all(isinstance(parts, dict) for parts in modes.values()):
        raise CommandError(f"{flag}: {path} is not a routing benchmark report (no 'modes')", exit_code=2)
    return report


def render(head: dict[str, Any], base: dict[str, Any] | None) -> list[str]:
    settings = head.get("settings") or {}
    lines = [
        "### Routing benchmark (replayed trace)",
        "",
        f"`python -m bench routing`: {settings.get('replicas', '?')} local replicas, concurrency "
        f"{settings.get('concurrency', '?')}; each cell is the head, then the change against the base branch. The "
        "hit rate is the engines' own count; latency and throughput are one run on a shared runner.",
    ]
    if base is None:
        lines.append("No base run (the base branch could not run the benchmark): the head's figures alone.")
    elif (base.get("settings") or {}) != settings:
        lines.append(f"The base ran with other settings ({_settings(base)}): compare with care.")
    lines += ["", "| mode | trace | hit rate | p90 ms | req/s | errors |", "|---|---|---:|---:|---:|---:|"]
    for mode, parts in head["modes"].items():
        old_parts = (base or {}).get("modes", {}).get(mode) or {}
        for part, now in parts.items():
            old = old_parts.get(part)
            lines.append(
                f"| `{mode}` | {PARTS.get(part, part)} | {_rate(now, old)} | {_ratio(now, old, 'p90_ms', '{:.0f}')} "
                f"| {_ratio(now, old, 'requests_per_s', '{:.2f}')} | {_errors(now, old)} |"
            )
    return lines + _at_load(head.get("at_load"), (base or {}).get("at_load"))


def _at_load(now: Any, old: Any) -> list[str]:
    """The equal-load replay's summary: each mode's throughput within the SLO and p90 TTFT at round robin's last load
    within it (``bench.routing_load.verdict``), the base's beside it."""
    if not isinstance(now, dict) or not isinstance(now.get("modes"), dict):
        return []
    slo = now.get("slo") or {}
    old_modes = (old or {}).get("modes") if isinstance(old, dict) else None
    equal = _number(now, "equal_load_per_s")
    lines = [
        "",
        f"Shared prefix at equal offered load (Poisson arrivals; the SLO: TTFT p50 <= {slo.get('ttft_p50_ms', '?')} ms, "
        f"p95 <= {slo.get('ttft_p95_ms', '?')} ms, no errors). The p90 is at "
        + (
            f"{equal:.2f} req/s, round robin's load at the SLO."
            if equal
            else "no load: round robin never held the SLO."
        ),
        "",
        "| mode | req/s within the SLO | p90 TTFT ms at equal load |",
        "|---|---:|---:|",
    ]
    raw = now.get("placements")
    placements: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for mode, figures in now["modes"].items():
        before = (old_modes or {}).get(mode) if isinstance(old_modes, dict) else None
        # A mode placed by hash is the median of several placements of the prompts (bench/routing.py --placements).
        draws = placements.get(mode)
        label = f"`{mode}`" + (
            f" (median of {len(draws)} placements)" if isinstance(draws, list) and len(draws) > 1 else ""
        )
        lines.append(
            f"| {label} | {_ratio(figures, before, 'throughput_at_slo_per_s', '{:.2f}')} "
            f"| {_ratio(figures, before, 'ttft_p90_ms_at_equal_load', '{:.0f}')} |"
        )
    return lines


def _settings(report: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted((report.get("settings") or {}).items())) or "none recorded"


def _number(part: dict[str, Any] | None, key: str) -> float | None:
    value = (part or {}).get(key)
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _rate(now: dict[str, Any], old: dict[str, Any] | None) -> str:
    head = _number(now, "hit_rate")
    if head is None:
        return "—"
    text = f"{head:.1%}"
    before = _number(old, "hit_rate")
    if before is not None:
        text += f" ({(head - before) * 100:+.1f} pt)"
    return text


def _ratio(now: dict[str, Any], old: dict[str, Any] | None, key: str, fmt: str) -> str:
    head = _number(now, key)
    if head is None:
        return "—"
    text = fmt.format(head)
    before = _number(old, key)
    if before:
        text += f" ({head / before:.2f}x)"
    return text


def _errors(now: dict[str, Any], old: dict[str, Any] | None) -> str:
    head = int(now.get("errors") or 0)
    before = None if old is None else int(old.get("errors") or 0)
    mark = " ❌" if head and (before is None or head > before) else ""
    return f"{head}{mark}" if before is None else f"{head} (was {before}){mark}"
