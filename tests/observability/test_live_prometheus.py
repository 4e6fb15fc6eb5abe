"""Proven live: a real Prometheus scrapes the real local Triton every second while a bounded load runs through the
local stack serve-local runs (the production ``tensorrt_llm`` LLM-API model with the CPU stand-in engine, behind the
image's OpenAI server; tools/local_openai_stack.py). The recording rules and the ScaledObject's exact queries are evaluated
on the scraped data, and the ScaledObject's rendered ``scalingModifiers.formula`` string is evaluated
(tests/observability/expr_lang.py) on the values those queries return: under load (waited for, with a
deadline, until the in-flight gauge passes the target by more than the HPA's tolerance) the formula
recommends a scale-up, capped at night; idle (waited for likewise) it returns to the floor. Both agree
with ``desired_replicas``. Dashboard queries whose series exist on CPU return data. The figures go to
build/observability/live-scaling.json (run with -s to see them):

    .venv/bin/python -m pytest tests/observability -s -q
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_platform.components.autoscaling.scaled_object import (
    HPA_TOLERANCE,
    ScaleTarget,
    ScalingPolicy,
    desired_replicas,
    scaled_object_spec,
    triggers,
)
from inference_platform.components.observability.dashboards import expand, queries, render
from inference_platform.components.observability.promql import REQUEST_OUTCOMES, Scope
from inference_platform.components.observability.rules import RuleSet, rule_groups, rules_file
from inference_platform.components.serving.inference_service import RELAYED_FAMILIES
from inference_platform.processes import free_port
from inference_platform.settings import stack_files
from tests.observability.keda_hpa import composite, recommendation
from tests.observability.prometheus_server import Target, running_prometheus
from tests.system_tools import require_tool

pytestmark = [pytest.mark.triton, pytest.mark.timeout(420)]

NAMESPACE, JOB = "inference", "triton"
SCOPE = Scope(namespace=NAMESPACE, job=JOB)
CLIENTS = 32
MAX_TOKENS = 128
SETTLE_TIMEOUT = 30.0
# Deadlines of the waits on the load showing and on the idle reading: generous for a shared 2-core box.
LOAD_TIMEOUT = 120.0
IDLE_TIMEOUT = 60.0
DAY = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
NIGHT = datetime(2026, 12, 3, 23, 0, tzinfo=UTC)
# Serving panels whose series the local stack publishes: Triton's and the OpenAI server's (TTFT, inter-token latency,
# tokens and outcomes are the server's). Replicas need kube-state-metrics; fleet, edge and cost need DCGM,
# neuron-monitor, Envoy and kube-state-metrics.
SERVING_PANELS_WITH_DATA = (
    "Requests/s",
    "Output tokens/s",
    "Requests in flight",
    "Replicas",
    "Time to first token",
    "Inter-token latency",
    "Tokens/s",
    "Requests/s by outcome and client",
    "Queue: requests waiting and active",
    "Queue time per request and queue/compute ratio",
    "Batch",
    "KV cache",
)
REPO = Path(__file__).resolve().parents[2]
PROMPT = "the quick brown fox jumps over the lazy dog " * 8


def _load(openai_url: str, model: str, stop: threading.Event, done: list[int], failed: list[str]) -> None:
    # The stand-in echoes the prompt: a long one keeps each request generating up to MAX_TOKENS.
    body = json.dumps({"model": model, "prompt": PROMPT, "max_tokens": MAX_TOKENS}).encode()
    while not stop.is_set():
        request = urllib.request.Request(
            f"{openai_url}/v1/completions", data=body, headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
            done.append(1)
        except Exception as err:  # recorded and asserted on below
            failed.append(f"{type(err).__name__}: {err}")


def _value(prom, expr: str, at: float) -> float:
    """One scalar at ``at``; an empty result is 0, as KEDA's Prometheus scaler reads it (ignoreNullValues)."""
    result = prom.query(expr, at=at)
    assert len(result) <= 1, f"{expr}: {len(result)} series, the trigger expects one"
    return float(result[0]["value"][1]) if result else 0.0


def _wait_for_values(prom, queries: dict[str, str], predicate, timeout: float) -> dict[str, float] | None:
    """Every trigger's value at one instant, polled until ``predicate`` holds (None at the deadline)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at = time.time()
        values = {name: _value(prom, expr, at) for name, expr in queries.items()}
        if predicate(values):
            return values
        time.sleep(0.5)
    return None


def _wait_for_series(prom, expr: str, timeout: float) -> list[dict[str, Any]]:
    deadline, found = time.monotonic() + timeout, []
    while time.monotonic() < deadline and not (found := prom.query(expr)):
        time.sleep(0.5)
    return found


def _wait_for(prom, expr: str, predicate, timeout: float) -> float | None:
    deadline, value = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        value = prom.scalar(expr)
        if value is not None and predicate(value):
            return value
        time.sleep(0.5)
    return value


def test_scaling_metric_crosses_its_target_under_load_and_returns_to_the_floor(tmp_path, shared_stack):
    prometheus = require_tool("prometheus")
    serving = stack_files.load("dev").serving
    policy = ScalingPolicy(
        scope=SCOPE,
        prometheus_url="http://prometheus.monitoring:9090",
        min_replicas=1,
        max_replicas=4,
        target_requests_per_replica=round(0.75 * serving.max_batch_size),
    )
    spec = scaled_object_spec(policy, ScaleTarget(name="triton"))
    by_name = {t.name: t for t in triggers(policy)}
    queries = {name: t.query for name, t in by_name.items()}
    target_value = by_name["requests"].target
    # Load "shows" once the gauge passes the target by more than the HPA's tolerance: a scale-up is due.
    showing = (1 + HPA_TOLERANCE) * target_value
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump(rules_file(rule_groups(RuleSet(scope=SCOPE))), sort_keys=False))
    stack = shared_stack  # the worker's one stack, read straight (tests/shared_stack.py)
    address = stack.triton_metrics_url.removeprefix("http://").removesuffix("/metrics")
    labels = {"namespace": NAMESPACE, "pod": "triton-local-0", "service": JOB}
    # As the rollout's ServiceMonitor scrapes the pod: Triton's metrics port, and the OpenAI server's /metrics less
    # the engine gauges it relays (components/serving/inference_service.py).
    targets = [
        Target(JOB, address, labels),
        Target(JOB, stack.openai_url.removeprefix("http://"), labels, drop=RELAYED_FAMILIES),
    ]
    with running_prometheus(prometheus, tmp_path / "prometheus", free_port(), targets, [rules]) as prom:
        requests_q = queries["requests"]
        assert _wait_for(prom, f'sum(up{{job="{JOB}"}})', lambda v: v == 2, SETTLE_TIMEOUT) == 2
        assert _wait_for(prom, requests_q, lambda v: True, SETTLE_TIMEOUT) is not None, "stand-in gauges scraped"
        idle_before = prom.scalar(requests_q)

        stop, done, failed = threading.Event(), [], []
        clients = [
            threading.Thread(target=_load, args=(stack.openai_url, stack.served_model, stop, done, failed), daemon=True)
            for _ in range(CLIENTS)
        ]
        started = time.monotonic()
        for client in clients:
            client.start()
        try:
            loaded = _wait_for_values(prom, queries, lambda v: v["requests"] > showing, LOAD_TIMEOUT)
            seconds_to_load = time.monotonic() - started
            recorded_ratio = _wait_for_series(
                prom, f'triton:queue_compute:ratio{{model="tensorrt_llm",job="{JOB}"}}', SETTLE_TIMEOUT
            )
            recorded_in_flight = prom.scalar(f'triton:llm_requests_in_flight:sum{{job="{JOB}"}}')
            # The server's counters move once two of its scrapes saw requests end (rate needs two points).
            server_rate = _wait_for(
                prom, f'sum(rate({REQUEST_OUTCOMES}{{job="{JOB}"}}[1m]))', lambda v: v > 0, SETTLE_TIMEOUT
            )
            dashboard_results = _dashboard_results(prom)
        finally:
            stop.set()
            for client in clients:
                client.join(timeout=90)
        assert not any(c.is_alive() for c in clients), "load clients did not stop"
        assert loaded is not None, f"in flight never passed {showing:g} within {LOAD_TIMEOUT:g} s"

        idle = _wait_for_values(prom, queries, lambda v: v["requests"] == 0, IDLE_TIMEOUT)
        assert idle is not None, f"in flight did not return to 0 within {IDLE_TIMEOUT:g} s"

    # The formula string the ScaledObject ships, evaluated on the scraped values, decides.
    up = recommendation(spec, loaded, day=True, current=1)
    night = recommendation(spec, loaded, day=False, current=1)
    down = recommendation(spec, idle, day=True, current=up)
    figures = {
        "query": requests_q,
        "formula": spec["advanced"]["scalingModifiers"]["formula"],
        "target_per_replica": target_value,
        "idle_before": idle_before,
        "loaded": loaded,
        "seconds_until_loaded": round(seconds_to_load, 1),
        "idle_after": idle,
        "formula_value_loaded_by_day": composite(spec, loaded, day=True),
        "formula_value_loaded_at_night": composite(spec, loaded, day=False),
        "formula_value_idle": composite(spec, idle, day=True),
        "recommendation_loaded_from_1_replica": up,
        "recommendation_loaded_at_night_from_1_replica": night,
        "recommendation_idle": down,
        "queue_compute_ratio_series_recorded": len(recorded_ratio),
        "requests_completed": len(done),
        "requests_failed": len(failed),
        "clients": CLIENTS,
    }
    out = REPO / "build" / "observability"
    out.mkdir(parents=True, exist_ok=True)
    (out / "live-scaling.json").write_text(json.dumps(figures, indent=2) + "\n")
    print("\nlive scaling figures:", json.dumps(figures, indent=2))

    assert not failed, failed[:3]
    assert idle_before == 0
    assert up > policy.min_replicas, f"the shipped formula kept {up} replicas under load ({loaded})"
    assert night == 2, "the night ceiling (ceil(4 x 0.5)) caps the same load"
    assert down == policy.min_replicas
    assert (up, night, down) == (
        desired_replicas(policy, loaded, current=1, instant=DAY),
        desired_replicas(policy, loaded, current=1, instant=NIGHT),
        desired_replicas(policy, idle, current=up, instant=DAY),
    ), "the shipped formula and desired_replicas disagree"
    assert recorded_ratio, "triton:queue_compute:ratio was not recorded"
    assert recorded_in_flight is not None
    missing = [title for title in SERVING_PANELS_WITH_DATA if not dashboard_results.get(title)]
    assert server_rate, "the OpenAI server's request counter never moved in Prometheus"
    assert not missing, f"serving panels without data on CPU: {missing}"


def _dashboard_results(prom) -> dict[str, bool]:
    """Panel title -> whether any of its queries returned data; every query must be accepted."""
    values = {"namespace": NAMESPACE, "model": ".*", "served": ".*", "pool": ".*", "route": ".*"}
    out: dict[str, bool] = {}
    for name, model in render().items():
        for panel in model["panels"]:
            found = False
            for expr in queries({"panels": [panel]}):
                found |= bool(prom.query(expand(expr, values)))
            key = panel["title"] if name == "inference-serving.json" else f"{name}:{panel['title']}"
            out[key] = found
    return out
