"""Small helpers over grafana-foundation-sdk's builders, so every dashboard reads alike.

Every query goes through :func:`query`, which records it; :func:`queries` lists the PromQL of a built
dashboard for the parse check (tests render Grafana's variables with :func:`expand`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import prometheus, stat, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as dm

DATASOURCE_VARIABLE = "datasource"
DATASOURCE = dm.DataSourceRef(type_val="prometheus", uid="${" + DATASOURCE_VARIABLE + "}")
RATE = "$__rate_interval"
"""Grafana's rate window (at least four scrape intervals)."""
# What the parse check puts in place of Grafana's variables: a valid PromQL matcher or duration.
VARIABLE_SAMPLES = {"$__rate_interval": "1m", "$__range": "1h", "$__interval": "30s"}


def query(expr: str, legend: str = "") -> prometheus.Dataquery:
    built = prometheus.Dataquery().expr(expr).datasource(DATASOURCE)
    return built.legend_format(legend) if legend else built


def series(title: str, targets: Iterable[tuple[str, str]], *, unit: str = "short", description: str = "") -> Any:
    panel = timeseries.Panel().title(title).unit(unit).datasource(DATASOURCE).height(8).span(12)
    if description:
        panel = panel.description(description)
    for ref, (expr, legend) in zip("ABCDEFGH", targets, strict=False):
        panel = panel.with_target(query(expr, legend).ref_id(ref))
    return panel


def single(title: str, expr: str, *, unit: str = "short", description: str = "") -> Any:
    panel = stat.Panel().title(title).unit(unit).datasource(DATASOURCE).height(4).span(6)
    if description:
        panel = panel.description(description)
    return panel.with_target(query(expr).ref_id("A"))


def datasource_variable() -> Any:
    return gd.DatasourceVariable(DATASOURCE_VARIABLE).label("Prometheus").type("prometheus")


def label_variable(name: str, label: str, metric: str, *, depends: str = "", multi: bool = True) -> Any:
    """A variable listing ``label``'s values on ``metric`` (optionally filtered by ``depends``)."""
    selector = f"{{{depends}}}" if depends else ""
    variable = (
        gd.QueryVariable(name)
        .label(name)
        .datasource(DATASOURCE)
        .query(f"label_values({metric}{selector}, {label})")
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .include_all(True)
        .all_value(".*")
    )
    return variable.multi(True) if multi else variable


def dashboard(uid: str, title: str, description: str, tags: list[str]) -> gd.Dashboard:
    return (
        gd.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["inference-platform", *tags])
        .refresh("30s")
        .time("now-6h", "now")
        .timezone("browser")
        .readonly()
        .with_variable(datasource_variable())
    )


def to_json(built: Any) -> dict[str, Any]:
    """The dashboard model as Grafana stores it (what the sidecar ConfigMap carries)."""
    # A dashboard encodes as one object.
    return cast(dict[str, Any], json.loads(JSONEncoder(sort_keys=True).encode(built)))


def queries(model: dict[str, Any]) -> list[str]:
    """Every PromQL expression of a dashboard's panels (rows included)."""
    out = []
    for panel in model.get("panels", []):
        for inner in [panel, *panel.get("panels", [])]:
            out += [t["expr"] for t in inner.get("targets", []) if t.get("expr")]
    return out


def expand(expr: str, values: dict[str, str]) -> str:
    """``expr`` with Grafana's ``$var`` / ``${var}`` replaced (longest names first)."""
    merged = {**VARIABLE_SAMPLES, **{f"${k}": v for k, v in values.items()}}
    for name in sorted(merged, key=len, reverse=True):
        expr = expr.replace("${" + name[1:] + "}", merged[name]).replace(name, merged[name])
    return expr
