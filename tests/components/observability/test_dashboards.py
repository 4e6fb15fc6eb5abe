"""Dashboards as code: built with grafana-foundation-sdk, every query parsed by Prometheus's own parser
(promtool check rules, each query as a recording rule), prices from the catalog."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from inference_platform import catalog
from inference_platform.components.observability.dashboards import DASHBOARDS, expand, queries, render
from inference_platform.components.observability.dashboards.cost import dollars_per_hour
from tests.system_tools import require_tool

# Grafana's "All" value for every multi-value variable of these dashboards.
ALL = {"namespace": ".*", "model": ".*", "pool": ".*", "route": ".*", "datasource": "prometheus"}


def test_every_dashboard_is_a_grafana_model_with_panels_and_the_datasource_variable():
    models = render()
    assert set(models) == set(DASHBOARDS)
    uids = [m["uid"] for m in models.values()]
    assert len(set(uids)) == len(uids)
    for name, model in models.items():
        assert model["title"].startswith("Inference: ") and model["panels"], name
        assert model["templating"]["list"][0]["type"] == "datasource"
        for panel in model["panels"]:
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, (name, panel["title"])
            assert panel["targets"], (name, panel["title"])


def test_the_serving_dashboard_covers_ttft_itl_tokens_queue_batch_and_kv_cache_per_model():
    titles = {p["title"] for p in render()["inference-serving.json"]["panels"]}
    for words in ("Time to first token", "Inter-token latency", "Tokens/s", "Queue", "Batch", "KV cache"):
        assert any(words in t for t in titles), words
    exprs = " ".join(queries(render()["inference-serving.json"]))
    assert "by (model" in exprs and 'model=~"$model"' in exprs


def test_cost_uses_the_catalog_prices():
    expr = dollars_per_hour()
    p5 = catalog.instance("p5.48xlarge")
    assert f'label_node_kubernetes_io_instance_type="p5.48xlarge"}} * {p5.price_per_hour_usd:g}' in expr
    assert "m7i.xlarge" not in expr  # no accelerator, not an accelerator cost


def test_every_dashboard_query_parses_with_prometheus(tmp_path):
    promtool = require_tool("promtool")
    rules = [
        {"record": f"dashboard:query_{i}", "expr": expand(expr, ALL)}
        for i, expr in enumerate(e for model in render().values() for e in queries(model))
    ]
    assert len(rules) > 40
    (tmp_path / "queries.yml").write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = subprocess.run(
        [str(promtool), "check", "rules", "queries.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("expr", ['rate(x{a=~"$namespace"}[$__rate_interval])'])
def test_expand_replaces_grafana_variables(expr):
    assert expand(expr, ALL) == 'rate(x{a=~".*"}[1m])'


def test_the_serving_dashboard_shows_each_version_side_by_side_for_rollouts():
    """Issue 32: a canary's share, TTFT/ITL p95 and error ratio beside its current version's (by ``job``, the
    version's Service); tests/inferctl/verify/test_canary_gate_live.py evaluates them on a real Prometheus."""
    panels = {p["title"]: p for p in render()["inference-serving.json"]["panels"]}
    rollout = [t for t in panels if t.startswith("Rollouts: ")]
    assert len(rollout) == 3, rollout
    exprs = " ".join(t["expr"] for title in rollout for t in panels[title]["targets"])
    assert "sum by (model_name, job)" in exprs and "vllm:e2e_request_latency_seconds_count" in exprs
    assert "sum by (job, status)" in exprs and "sum by (job, finished_reason)" in exprs
