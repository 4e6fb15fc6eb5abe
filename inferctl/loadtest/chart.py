"""The load test's picture: latency percentiles against offered load, with the SLO lines.

matplotlib's Agg backend (no display needed); imported only when a chart is written.
"""

from __future__ import annotations

from pathlib import Path

from inferctl.loadtest.records import Summary


def latency_chart(
    levels: dict[float, Summary],
    path: Path,
    *,
    load_label: str,
    title: str,
    ttft_slo_ms: float | None = None,
    itl_slo_ms: float | None = None,
) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loads = sorted(levels)
    fig, (ttft_ax, itl_ax) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for ax, name, p50, p95, slo in (
        (ttft_ax, "TTFT", "ttft_p50_ms", "ttft_p95_ms", ttft_slo_ms),
        (itl_ax, "Inter-token latency", "itl_p50_ms", "itl_p95_ms", itl_slo_ms),
    ):
        for attr, style, label in ((p50, "o-", "p50"), (p95, "s--", "p95")):
            points = [(x, getattr(levels[x], attr)) for x in loads if getattr(levels[x], attr) is not None]
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], style, label=label)
        if slo is not None:
            ax.axhline(slo, color="tab:red", linewidth=1, label=f"SLO {slo:g} ms")
        ax.set_xlabel(load_label)
        ax.set_ylabel(f"{name} (ms)")
        ax.set_title(name)
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
        rate_ax = ax.twinx()
        rate_ax.plot(loads, [levels[x].output_tokens_per_s for x in loads], ":", color="tab:gray")
        rate_ax.set_ylabel("output tokens/s (dotted)", color="tab:gray")
        rate_ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
