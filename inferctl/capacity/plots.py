"""The two pictures: tokens/s per GPU vs batch with the SLO limits, and cost vs tokens/day by accelerator.

matplotlib with the Agg backend (files only, no display).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from components.catalog import capacity
from components.catalog.capacity import Plan


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _throughput_axes(ax: Any, predictions: list[Any]) -> None:
    for p in predictions:
        r = p.replica
        batches = [pt.batch for pt in p.sweep]
        rate = [pt.tokens_per_s_per_accelerator for pt in p.sweep]
        (line,) = ax.plot(batches, rate, label=f"{r.node.accelerator_model} {r.node.name} TP{r.tp}")
        ok = [pt.meets(p.slo) for pt in p.sweep]
        ax.fill_between(batches, 0, rate, where=ok, color=line.get_color(), alpha=0.12, step="mid")
        if p.best is not None:
            ax.plot([p.best.batch], [p.best.tokens_per_s_per_accelerator], "o", color=line.get_color())
            ax.annotate(f"batch {p.best.batch}", (p.best.batch, p.best.tokens_per_s_per_accelerator),
                        textcoords="offset points", xytext=(4, 4), fontsize=8)  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch (concurrent sequences)")
    ax.set_ylabel("output tokens/s per GPU")
    slo = predictions[0].slo
    title = "throughput vs batch"
    if slo is not None:
        title += f" (shaded: meets TTFT <= {slo.ttft_ms:g} ms, ITL <= {slo.itl_ms:g} ms)"
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def _itl_axes(ax: Any, predictions: list[Any]) -> None:
    for p in predictions:
        ax.plot([pt.batch for pt in p.sweep], [pt.itl_ms for pt in p.sweep], "--", linewidth=1)
    slo = predictions[0].slo
    if slo is not None:
        ax.axhline(slo.itl_ms, color="red", linewidth=1, linestyle=":")
        ax.text(1, slo.itl_ms, f" ITL limit {slo.itl_ms:g} ms", color="red", fontsize=8, va="bottom")
    ax.set_ylabel("ITL ms (dashed)")


def throughput_plot(predictions: list[Any], path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    _throughput_axes(ax, predictions)
    _itl_axes(ax.twinx(), predictions)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plan_plot(plans: list[Plan], path: Path) -> Path:
    """Left: each plan's replica throughput vs batch with the SLO. Right: monthly on-demand cost vs
    tokens/day for each plan's layout (the same SLO and request shape)."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    predictions = [p.option.prediction for p in plans]
    _throughput_axes(left, predictions)
    _itl_axes(left.twinx(), predictions)
    base = plans[0].demand
    volumes = np.logspace(9, 15, 25)
    for p in plans:
        costs = []
        for v in volumes:
            demand = capacity.Demand(tokens_per_day=float(v), isl=base.isl, osl=base.osl, slo=base.slo,
                                     peak_factor=base.peak_factor, night_fraction=base.night_fraction,
                                     night_hours=base.night_hours)  # fmt: skip
            costs.append(capacity.plan(demand, p.option, region=p.region).monthly_usd.on_demand)
        right.plot(volumes, costs, label=f"{p.option.replica.node.accelerator_model} ({p.option.label})")
    right.axvline(base.tokens_per_day, color="grey", linestyle=":", linewidth=1)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("tokens per day (input + output)")
    right.set_ylabel("monthly on-demand cost, USD")
    right.set_title(f"cost vs volume ({base.isl}/{base.osl} tokens, same SLO)", fontsize=9)
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
