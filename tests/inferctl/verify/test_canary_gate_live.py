"""Issue 32, the canary gate's live witness on the local rig: two real local stacks (CPU Triton with the stand-in
engine and the image's OpenAI server), the canary's stand-in made slower, behind the real TLS Envoy with the model
routing at weight 50, and a real Prometheus scraping both servers' ``/metrics`` as the rollouts' ServiceMonitors
would (``namespace``, ``job`` = the Service's name).

Real traffic goes through the edge; then ``gate()`` runs as ``inferctl verify`` runs it: the settings' canary
bounds, the synthetic side-by-side load with the tester header, and both versions' TTFT/ITL percentiles and
request counts read from Prometheus over the window that ended before the gate's own load. What is shown:

- before real traffic, too few live requests: a canary at 50 % is held, and the reason names liveMinRequests;
- after it, the live figures come from the servers' histograms (the canary's TTFT p95 above 1.25 x the current
  version's) and the gate rolls the canary back to 0 with the live reason beside the synthetic one (the synthetic
  first token is the first text, not the role chunk the server sends before the engine answers);
- the same live figures with the roles swapped pass: the judgement is the comparison, not the rig.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from inference_platform.components.edge.model_routing import ModelBackend, ModelRoute, ModelRouting
from inference_platform.components.serving.inference_service import RELAYED_FAMILIES
from inference_platform.inferctl.serving.edge_envoy import Upstream
from inference_platform.inferctl.verify.canary_gate import Sample, decide, gate, limits_of, live_scopes
from inference_platform.inferctl.verify.canary_live import Live, measure_live
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.processes import free_port
from inference_platform.settings import load_settings
from tests.inferctl.serving.test_model_rollouts_edge import TAGS, chat, rig
from tests.system_tools import require_tool
from tools.local_openai_stack import openai_stack
from tools.prometheus_server import Prometheus, Target, running_prometheus

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(900)]

NAMESPACE = "inference"
LIVE_REQUESTS = 60
"""Real requests through the edge at weight 50: about 30 for each version."""
GATE = {"minRequests": 10, "liveWindowSeconds": 60, "liveMinRequests": 15}
FAST = Timing(first_token_delay_ms=10, token_delay_ms=3)
SLOW = Timing(first_token_delay_ms=300, token_delay_ms=20)
SCRAPE_WAIT_S = 60.0


def _settings(weight: int) -> Any:
    canary = {"version": "v2", "weight": weight, "inference": {"image": {"tag": "2026.12.1"}}, "gate": GATE}
    inference = {"image": {"tag": "2026.11.2"}, "model": {"engine": "llama/v1/", "tokenizer": "llama/tok/"}}
    # The SLOs far above this machine's first token: the slow canary fails on the ratio to the current version.
    serving = {"slo": {"ttftP95Ms": 5000, "itlP50Ms": 500}}
    values = {
        "tags": TAGS,
        "serving": serving,
        "inference": inference,
        "models": {"canary": canary},
        "edge": {"routing": {"mode": "envoy"}},
    }  # the prefix hash, dev's default: the script draws the canary's share under any balancer
    return load_settings(values, project="p", stack="dev", region="us-west-2")


def _scraped(prom: Prometheus, job: str) -> float:
    found = prom.query(f'sum(http_requests_total{{namespace="{NAMESPACE}",job="{job}"}})')
    return float(found[0]["value"][1]) if found else 0.0


def _served(url: str) -> float:
    """The server's own count of generation requests (its /metrics page), to know Prometheus has caught up."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("http_requests_total{"))


def _wait_scraped(prom: Prometheus, jobs: dict[str, str]) -> None:
    """Until Prometheus holds every request each server counted (bounded; a scrape is every second)."""
    deadline = time.monotonic() + SCRAPE_WAIT_S
    while time.monotonic() < deadline:
        if all(_scraped(prom, job) >= _served(url) > 0 for job, url in jobs.items()):
            return
        time.sleep(0.5)
    raise AssertionError(f"Prometheus did not catch up with the servers within {SCRAPE_WAIT_S:.0f} s")


def _dashboard(prom: Prometheus) -> tuple[dict[str, float], dict[str, float]]:
    """The serving dashboard's rollout panels, evaluated: share of requests by version, and each version's outcome
    series (``HTTP <status>`` and finish reasons) with their share of its judged requests."""
    from inference_platform.components.observability.dashboards import expand, render

    panels = {p["title"]: p for p in render()["inference-serving.json"]["panels"]}
    values = {"namespace": NAMESPACE, "served": ".*"}
    share = panels["Rollouts: share of each model's requests by version"]["targets"][0]["expr"]
    shares = {r["metric"]["job"]: float(r["value"][1]) for r in prom.query(expand(share, values))}
    outcomes: dict[str, float] = {}
    for target in panels["Rollouts: outcomes by version"]["targets"]:
        for r in prom.query(expand(target["expr"], values)):
            labels = r["metric"]
            outcomes[f"{labels['job']} {labels.get('status') or labels['finished_reason']}"] = float(r["value"][1])
    return shares, outcomes


def test_a_canary_slower_under_real_traffic_is_rolled_back_from_prometheus(tmp_path: Path) -> None:
    prometheus = require_tool("prometheus")
    settings = _settings(50)
    limits = limits_of(settings)
    assert limits is not None and limits.live_window_s == 60 and limits.live_min_requests == 15
    canary_scope, current_scope = live_scopes(settings, NAMESPACE)
    assert (current_scope.job, canary_scope.job) == ("triton", "triton-llama-3-1-8b-v2")
    model = settings.serving.served_model_name

    with (
        openai_stack(settings, tmp_path / "current", FAST, edge=False) as current,
        openai_stack(settings, tmp_path / "canary", SLOW, edge=False) as canary,
    ):
        jobs = {current_scope.job: current.openai_url, canary_scope.job: canary.openai_url}
        targets = [
            Target(job, url.removeprefix("http://"), {"namespace": NAMESPACE, "service": job}, drop=RELAYED_FAMILIES)
            for job, url in jobs.items()
        ]
        backends = {
            job: ModelBackend(service=job, namespace=NAMESPACE, port=int(url.rsplit(":", 1)[1]))
            for job, url in jobs.items()
        }
        routing = ModelRouting(
            models=(
                ModelRoute(
                    name=model,
                    current=backends[current_scope.job],
                    canary=backends[canary_scope.job],
                    canary_weight=50,
                ),
            )
        )
        upstreams = {b: Upstream(address="127.0.0.1", port=b.port) for b in backends.values()}
        with (
            running_prometheus(prometheus, tmp_path / "prometheus", free_port(), targets, []) as prom,
            rig(routing, upstreams, tmp_path / "edge") as edge,
        ):
            # One request each creates the servers' series; Prometheus's increase() counts from its first sample.
            for headers in ({"x-canary": "always"}, {"x-canary": "current"}):
                assert edge.post(chat(model), headers)[0] == 200
            _wait_scraped(prom, jobs)
            time.sleep(1.5)
            early = measure_live(prom.url, canary_scope, current_scope, 60, at=time.time())
            good = Sample(requests=20, errors=0, ttft_p95_ms=50)
            held = decide(good, good, limits, early)
            assert early.measured and held.action == "hold" and held.weight == 50, held
            assert "liveMinRequests" in held.reason, held

            for _ in range(LIVE_REQUESTS):
                assert edge.post(chat(model))[0] == 200
            _wait_scraped(prom, jobs)
            time.sleep(1.5)  # one more scrape: the window's last sample is after the last request
            until = time.time()
            shares, errors = _dashboard(prom)
            headers = {"authorization": f"Bearer {edge.key}"}
            gated = gate(edge.url, settings, headers, prometheus_url=prom.url, namespace=NAMESPACE,
                         live_until=until, ca_file=None, context=edge.context)  # fmt: skip
    assert gated is not None
    decision, live = gated
    assert live is not None and live.canary is not None and live.current is not None, live
    print(f"live over {live.window_s} s: canary {live.canary.as_output()}, current {live.current.as_output()}")
    print(f"decision: {decision.action} to {decision.weight} %: {decision.reason}")
    assert live.canary.requests >= limits.live_min_requests and live.current.requests >= limits.live_min_requests
    assert live.canary.errors == 0 and live.current.errors == 0
    assert live.canary.ttft_p95_ms is not None and live.current.ttft_p95_ms is not None
    assert live.canary.ttft_p95_ms > limits.max_ttft_ratio * live.current.ttft_p95_ms
    assert (decision.action, decision.weight) == ("rollback", 0), decision
    # The dashboard's rollout panels on the same Prometheus: both versions' shares of the model, no errors.
    print(f"dashboard: shares {shares}, error ratios {errors}")
    assert set(shares) == {canary_scope.job, current_scope.job}
    assert abs(sum(shares.values()) - 1) < 1e-9 and all(0 < v < 1 for v in shares.values())
    assert {k for k in errors if k.endswith(("5xx", "error"))} == set()
    for job in shares:
        assert errors[f"{job} 2xx"] == 1, errors
    assert "live: canary TTFT p95" in decision.reason and "synthetic: canary TTFT p95" in decision.reason, decision

    swapped = Live(live.window_s, canary=live.current, current=live.canary)
    promoted = decide(Sample(20, 0, 50), Sample(20, 0, 50), limits, swapped)
    assert (promoted.action, promoted.weight) == ("promote", 100), promoted
