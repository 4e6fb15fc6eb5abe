"""Pinned charts: every chart carries an exact version, and its Helm source is what Release needs."""

from __future__ import annotations

import re

import pytest

from inference_platform.catalog import charts, serving_charts, storage_charts
from inference_platform.catalog.charts import Chart

PINNED = [
    value
    for module in (charts, serving_charts, storage_charts)
    for value in vars(module).values()
    if isinstance(value, Chart)
]


@pytest.mark.parametrize("chart", PINNED, ids=lambda c: c.chart)
def test_every_chart_is_pinned_to_an_exact_version(chart):
    assert re.fullmatch(r"v?\d+\.\d+\.\d+", chart.version), chart
    assert chart.repository is None or chart.repository.startswith("https://")
    assert (chart.repository is None) == chart.chart.startswith("oci://")


def test_release_source_names_the_repository_only_when_there_is_one():
    assert Chart("x", "1.2.3", "https://example.com/charts").release_source() == {
        "chart": "x",
        "version": "1.2.3",
        "repository_opts": {"repo": "https://example.com/charts"},
    }
    assert Chart("oci://r/x", "1.2.3").release_source() == {"chart": "oci://r/x", "version": "1.2.3"}
