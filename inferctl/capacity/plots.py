"""The pictures: tokens/s per GPU vs batch with the SLO limits (capacity throughput); for capacity plan,
throughput against latency per accelerator with the SLO, and $ per million tokens against tokens/day with
the chosen option marked.

matplotlib with the Agg backend (files only, no display).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from inference_platform.planners import capacity
from inference_platform.planners.capacity import Plan


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


MAX_LABELLED = 4
"""--compare draws every chip but names only the cheapest few (and the chosen one); the rest are grey."""


def plan_plot(plans: list[Plan], path: Path) -> Path:
    """Left: throughput against latency per accelerator (output tokens/s per GPU vs ITL over the batch
    sweep), the SLO's ITL limit drawn, points missing the TTFT limit hollow, each layout's planned batch
    starred. Right: $ per million tokens (input + output, on demand, whole nodes billed) against tokens/day
    for each layout, the chosen option (the cheapest at the planned volume) marked with its figures, and
    volumes one cluster cannot carry shaded. With many plans (--compare) only the cheapest
    ``MAX_LABELLED`` are named and coloured."""
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.6))
    ranked = sorted(plans, key=lambda p: p.usd_per_million_total.on_demand)
    chosen = ranked[0]
    named = ranked[:MAX_LABELLED]
    colours = {id(p): plt.cm.tab10(i) for i, p in enumerate(named)}
    base = chosen.demand
    volumes = np.logspace(math.log10(base.tokens_per_day) - 3, math.log10(base.tokens_per_day) + 3, 49)
    beyond: float | None = None
    for p in reversed(ranked):  # the named ones drawn last, on top
        colour = colours.get(id(p), "0.75")
        label = f"{p.option.replica.node.accelerator_model} ({p.option.label})" if id(p) in colours else None
        width = 2.2 if p is chosen else (1.4 if label else 0.8)
        _latency_curve(left, p, colour, label, width)
        costs = []
        for v in volumes:
            demand = capacity.Demand(tokens_per_day=float(v), isl=base.isl, osl=base.osl, slo=base.slo,
                                     peak_factor=base.peak_factor, night_fraction=base.night_fraction,
                                     night_hours=base.night_hours)  # fmt: skip
            at = capacity.plan(demand, p.option, region=p.region, factors=p.factors)
            costs.append(at.usd_per_million_total.on_demand)
            if p is chosen and beyond is None and capacity.single_pool_problem(at):
                beyond = float(v)
        right.plot(volumes, costs, color=colour, linewidth=width, label=label, drawstyle="steps-post")
    cost = chosen.usd_per_million_total.on_demand
    right.plot([base.tokens_per_day], [cost], marker="*", markersize=16, color="black", zorder=5)
    right.annotate(
        f"chosen: {chosen.option.replica.node.accelerator_model} {chosen.option.label}\n"
        f"${cost:.3f}/M tokens at {base.tokens_per_day:.3g}/day\n"
        f"{chosen.pool_max_nodes} node(s) at peak, ${chosen.monthly_usd.on_demand:,.0f}/month",
        (base.tokens_per_day, cost), textcoords="offset points", xytext=(12, 18), fontsize=8,
        bbox={"boxstyle": "round", "fc": "white", "ec": "0.6"}, arrowprops={"arrowstyle": "-", "color": "0.4"},
    )  # fmt: skip
    if beyond is not None:
        right.axvspan(beyond, volumes[-1], color="tab:red", alpha=0.07)
        right.text(beyond, 0.5, "beyond one cluster:\ncapacity fleet ", color="tab:red", fontsize=8,
                   va="bottom", ha="right", transform=right.get_xaxis_transform())  # fmt: skip
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("tokens per day (input + output)")
    right.set_ylabel("$ per million tokens (on demand, whole nodes)")
    right.set_title(f"cost per million tokens vs volume ({base.isl}/{base.osl} tokens in/out, same SLO)", fontsize=9)
    right.grid(True, which="both", alpha=0.3)
    _ranked_legend(right, named, "upper right")
    slo = base.slo
    if slo is not None:
        left.axvline(slo.itl_ms, color="tab:red", linewidth=1, linestyle=":")
        left.text(slo.itl_ms, left.get_ylim()[1], f" ITL SLO {slo.itl_ms:g} ms", color="tab:red", fontsize=8,
                  va="top")  # fmt: skip
    left.set_xlabel("inter-token latency, ms (batch grows to the right)")
    left.set_ylabel("output tokens/s per GPU")
    ttft = f"; hollow: TTFT > {slo.ttft_ms:g} ms" if slo is not None else ""
    left.set_title(f"throughput vs latency per accelerator (star: planned batch{ttft})", fontsize=9)
    left.grid(True, alpha=0.3)
    _ranked_legend(left, named, "center right")
    hidden = len(ranked) - len(named)
    if hidden > 0:
        fig.text(0.01, 0.01, f"grey: {hidden} more option(s), dearer per million tokens", fontsize=8, color="0.4")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _latency_curve(ax: Any, p: Plan, colour: Any, label: str | None, width: float) -> None:
    prediction = p.option.prediction
    sweep = prediction.sweep
    slo = prediction.slo
    ax.plot([pt.itl_ms for pt in sweep], [pt.tokens_per_s_per_accelerator for pt in sweep], color=colour,
            linewidth=width, label=label)  # fmt: skip
    if label is None:
        return
    ok = [pt for pt in sweep if slo is None or pt.ttft_ms <= slo.ttft_ms]
    late = [pt for pt in sweep if slo is not None and pt.ttft_ms > slo.ttft_ms]
    ax.plot([pt.itl_ms for pt in ok], [pt.tokens_per_s_per_accelerator for pt in ok], "o", color=colour, markersize=3)
    ax.plot([pt.itl_ms for pt in late], [pt.tokens_per_s_per_accelerator for pt in late], "o", markersize=4,
            markerfacecolor="white", markeredgecolor=colour)  # fmt: skip
    best = prediction.best
    if best is not None:
        ax.plot([best.itl_ms], [best.tokens_per_s_per_accelerator], "*", color=colour, markersize=13,
                markeredgecolor="black")  # fmt: skip
        ax.annotate(f"batch {best.batch}", (best.itl_ms, best.tokens_per_s_per_accelerator), textcoords="offset points",
                    xytext=(5, -10), fontsize=7, color=colour)  # fmt: skip


def _ranked_legend(ax: Any, named: list[Plan], loc: str) -> None:
    """The legend in rank order (cheapest per million tokens first), whatever order the lines were drawn in."""
    handles, labels = ax.get_legend_handles_labels()
    by_label = dict(zip(labels, handles, strict=True))
    order = [f"{p.option.replica.node.accelerator_model} ({p.option.label})" for p in named]
    keep = [label for label in order if label in by_label]
    ax.legend([by_label[label] for label in keep], [f"{i + 1}. {label}" for i, label in enumerate(keep)], fontsize=8,
              loc=loc, title="by $/M tokens", title_fontsize=8)  # fmt: skip
