"""The load test's picture: latency percentiles against offered load, with the SLO lines.

matplotlib's Agg backend (no display needed); imported only when a chart is written.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from inference_platform.loadgen.records import Summary


def latency_chart(
    levels: dict[float, Summary],
    path: Path,
    *,
    load_label: str,
    title: str,
    ttft_slo_ms: float | None = None,
    itl_slo_ms: float | None = None,
    ttft_p50_slo_ms: float | None = None,
    itl_p50_slo_ms: float | None = None,
    verdict: bool | None = None,
    failed_checks: list[str] | None = None,
    planned_load: float | None = None,
) -> Path:
    """p50/p95 TTFT and ITL against the load with their SLO lines (p95 solid, p50 dashed), output tokens/s
    (dotted, right axis) and the errors at each load as red bars; with ``verdict`` the title says PASS or
    FAIL (with the failed checks) and the planned load is marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loads = sorted(levels)
    fig, (ttft_ax, itl_ax) = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
    errors_total = sum(levels[x].errors for x in loads)
    requests_total = sum(levels[x].requests for x in loads)
    for ax, name, p50, p95, slo95, slo50 in (
        (ttft_ax, "TTFT", "ttft_p50_ms", "ttft_p95_ms", ttft_slo_ms, ttft_p50_slo_ms),
        (itl_ax, "Inter-token latency", "itl_p50_ms", "itl_p95_ms", itl_slo_ms, itl_p50_slo_ms),
    ):
        for attr, style, label, color in ((p50, "o-", "p50", "tab:blue"), (p95, "s--", "p95", "tab:orange")):
            points = [(x, getattr(levels[x], attr)) for x in loads if getattr(levels[x], attr) is not None]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], style, color=color, label=label)
        if slo95 is not None:
            ax.axhline(slo95, color="tab:orange", linewidth=1.2, label=f"p95 SLO {slo95:g} ms")
        if slo50 is not None:
            ax.axhline(slo50, color="tab:blue", linewidth=1.2, linestyle="--", label=f"p50 SLO {slo50:g} ms")
        if planned_load is not None:
            ax.axvline(planned_load, color="black", linewidth=0.8, linestyle=":", label="planned load")
        ax.set_xlabel(load_label)
        ax.set_ylabel(f"{name} (ms)")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        rate_ax = ax.twinx()
        rate_ax.plot(loads, [levels[x].output_tokens_per_s for x in loads], ":", color="tab:gray")
        width = 0.25 * min((b - a for a, b in itertools.pairwise(loads)), default=max(loads[0], 1) * 0.5)
        bars = [levels[x].errors for x in loads]
        if any(bars):
            err_ax = ax.twinx()
            drawn = err_ax.bar(loads, bars, width=width, color="tab:red", alpha=0.35, label="errors")
            err_ax.bar_label(drawn, labels=[f"{n} err" if n else "" for n in bars], color="tab:red", fontsize=8)
            err_ax.set_ylim(0, max(bars) * 4)  # bars in the lower quarter, under the latency lines
            err_ax.set_yticks([])
        rate_ax.set_ylabel("output tokens/s (dotted)", color="tab:gray")
        rate_ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", fontsize=8)
    head = title
    errors = f"{errors_total} error(s) in {requests_total} requests"
    if verdict is not None:
        word = "PASS" if verdict else "FAIL"
        failed = f": {', '.join(failed_checks)}" if failed_checks and not verdict else ""
        fig.suptitle(f"VERDICT {word}{failed} - {errors}\n{head}", color="tab:green" if verdict else "tab:red",
                     fontsize=11, fontweight="bold")  # fmt: skip
    else:
        fig.suptitle(f"{head} - {errors}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
