"""The class check (issue 27 section 5): every series the rules, alerts, dashboards and ScaledObjects read is published,
on the live local stack, by what publishes it in the pod or at the edge; the few that only other exporters publish
are named, each with its exporter. After a short load through the real edge, the local stack's /metrics pages are
read (Triton's metrics port, the OpenAI server's /metrics, Envoy's admin /stats/prometheus) and:

- a series nobody publishes fails the test (the old TTFT rule read ``nv_inference_first_response_histogram_ms`` of
  models that no longer exist, so its alert could never fire; the tokens panels read ``nv_llm_output_token_len``,
  which the LLM-API model never published);
- for the pod's own families (``nv_*``, ``vllm:*``, ``http_requests_total``) the label matchers must select a
  published sample too (``model=~"ensemble|tensorrt_llm_bls"`` selected nothing);
- a recording rule read must be one the rules record.

The TTFT SLO alert is also shown to fire on a real Prometheus: with the SLO set below the stand-in's first token, it
reaches pending (``for`` would then make it fire), from the OpenAI server's histogram.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterable

import openai
import pytest
import yaml

from inference_platform.catalog.alert_thresholds import AlertThresholds
from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy, scaled_object_spec
from inference_platform.components.observability.dashboards import expand, queries, render
from inference_platform.components.observability.promql import Scope
from inference_platform.components.observability.rules import RuleSet, rule_groups, rules_file
from inference_platform.components.observability.token_rules import TokenMeter
from inference_platform.components.serving.inference_service import RELAYED_FAMILIES
from inference_platform.processes import free_port
from tests.observability.series_names import Read, is_recording_rule, reads
from tests.system_tools import require_tool
from tools.prometheus_server import Target, running_prometheus

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(300)]

NS, JOB = "inference", "triton"
SCRAPE_LABELS = {"namespace", "job", "pod", "instance", "service", "endpoint", "container"}
"""What the ServiceMonitor adds to every sample: not the pod's to publish."""
OWN = ("nv_", "vllm:", "http_requests_total")
"""Families the pod publishes (Triton, the tensorrt_llm model, the OpenAI server): their matchers are checked too."""
EXTERNAL = {
    "kube_": "kube-state-metrics (the monitoring stack's chart)",
    "DCGM_": "NVIDIA's DCGM exporter on GPU nodes",
    "neuroncore_": "AWS neuron-monitor on Neuron nodes",
    "neuron_runtime_": "AWS neuron-monitor on Neuron nodes",
    "neurondevice_": "AWS neuron-monitor on Neuron nodes",
    "execution_errors_total": "AWS neuron-monitor on Neuron nodes",
    "neuron_llm_request_metrics": "our neuron_llm model (inference_image/neuron/model.py), which needs a Neuron device",
    "karpenter_": "Karpenter's controller",
    "cluster_autoscaler_": "the Cluster Autoscaler",
    "up": "Prometheus itself, per target",
    "envoy_cluster_ratelimit_": "Envoy Gateway's global rate limit (its Redis-backed service is not run locally)",
    "ratelimit_cluster": "Envoy Gateway's global rate limit",
    "ratelimit_service_": "Envoy Gateway's rate-limit service (envoyproxy/ratelimit), not run locally",
    "batch_tokens_total": "the batch lane's workers (batch/usage.py; tests/batch/test_lane_edge.py reads it from one)",
    "llm_d_epp_": "llm-d's endpoint picker, a Go binary not run here: its names are held to llm-d-router v0.10.0 in "
    "tests/components/edge/test_endpoint_picker_metrics.py",
}
"""Series prefixes other exporters publish, with which one."""
METERS = (TokenMeter(client="default", domain="envoy-gateway-system/inference-edge-backend", key1="rule"),)
"""The charged-vs-served rules of one metered client (issue 30): the charged side is the rate-limit service's."""


def _scopes() -> list[Scope]:
    return [Scope(namespace=NS, job=JOB), Scope(namespace=NS, job=JOB, backend="neuron")]


def planned_reads() -> list[tuple[str, Read]]:
    """(where, read) for every series the rules, alerts, dashboards and ScaledObjects read."""
    out: list[tuple[str, Read]] = []
    for scope in _scopes():
        vendor = "neuron" if scope.backend == "neuron" else "nvidia"
        rule_set = RuleSet(scope=scope, vendor=vendor, hpa="keda-hpa-triton", edge_clusters="httproute/.*",
                           endpoint_picker="inference-router-epp", token_meters=METERS)  # fmt: skip
        for group in rule_groups(rule_set):
            for rule in group["rules"]:
                where = f"rule {rule.get('record') or rule.get('alert')}"
                out += [(where, r) for r in reads(rule["expr"])]
        policy = ScalingPolicy(scope=scope, prometheus_url="http://p:9090",
                               kv_cache_target=None if scope.backend == "neuron" else 0.85)  # fmt: skip
        for trigger in scaled_object_spec(policy, ScaleTarget(name="triton"))["triggers"]:
            if trigger["type"] == "prometheus":
                out += [(f"ScaledObject trigger {trigger['name']}", r) for r in reads(trigger["metadata"]["query"])]
    variables = {"namespace": NS, "model": ".*", "served": ".*", "pool": ".*", "route": ".*"}
    for name, model in render().items():
        for expr in queries(model):
            out += [(f"dashboard {name}", r) for r in reads(expand(expr, variables))]
    return out


def recorded() -> set[str]:
    return {r["record"] for s in _scopes() for g in rule_groups(RuleSet(scope=s, vendor="neuron" if s.backend == "neuron"
            else "nvidia", token_meters=METERS)) for r in g["rules"] if "record" in r}  # fmt: skip


def unpublished(
    planned: Iterable[tuple[str, Read]], published: dict[str, list[dict[str, str]]], records: set[str]
) -> list[str]:
    """What nobody publishes (or no published sample matches), one line each."""
    problems = []
    for where, read in planned:
        if is_recording_rule(read.name):
            if read.name not in records:
                problems.append(f"{where}: reads recording rule {read.name}, which no rule records")
            continue
        samples = published.get(read.name)
        if samples is None:
            if not any(read.name.startswith(prefix) for prefix in EXTERNAL):
                problems.append(f"{where}: reads {read.name}, which nothing publishes")
            continue
        if read.name.startswith(OWN) and not any(_matches(read, s) for s in samples):
            problems.append(f"{where}: {read.name}{{{_show(read)}}} selects none of the published samples")
    return sorted(set(problems))


def _matches(read: Read, labels: dict[str, str]) -> bool:
    for label, op, value in read.matchers:
        if label in SCRAPE_LABELS:
            continue
        have = labels.get(label, "")
        hit = re.fullmatch(value, have) is not None if op in ("=~", "!~") else have == value
        if hit != (op in ("=", "=~")):
            return False
    return True


def _show(read: Read) -> str:
    return ",".join(f'{label}{op}"{value}"' for label, op, value in read.matchers)


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(urls: Iterable[str]) -> dict[str, list[dict[str, str]]]:
    """Sample name (as exposed: a counter keeps its own name) -> the label sets published under it, over every page."""
    out: dict[str, list[dict[str, str]]] = {}
    for url in urls:
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        for line in text.splitlines():
            match = _SAMPLE.match(line)
            if match:
                out.setdefault(match.group(1), []).append(dict(_LABEL.findall(match.group(2) or "")))
    return out


def test_the_check_catches_what_nobody_publishes_and_a_selector_that_selects_nothing():
    published = {"nv_inference_count": [{"model": "tensorrt_llm"}]}
    planned = [("old rule", r) for r in reads('rate(nv_llm_output_token_len_sum{model="tensorrt_llm"}[5m])')]
    planned += [("old rule", r) for r in reads('rate(nv_inference_count{model=~"ensemble|tensorrt_llm_bls"}[5m])')]
    planned += [("alert", r) for r in reads("triton:first_response_seconds:p95 > 2")]
    assert unpublished(planned, published, set()) == [
        "alert: reads recording rule triton:first_response_seconds:p95, which no rule records",
        'old rule: nv_inference_count{model=~"ensemble|tensorrt_llm_bls"} selects none of the published samples',
        "old rule: reads nv_llm_output_token_len_sum, which nothing publishes",
    ]


def test_the_check_reads_the_rollout_panels_with_their_matchers():
    """Issue 32's rollout panels (components/observability/dashboards/rollouts.py) are on the serving dashboard, so
    the live check below judges each of their reads, label matchers included (``handler``, ``status``,
    ``finished_reason`` must select published samples)."""
    from inference_platform.components.observability.dashboards import rollouts

    variables = {"namespace": NS, "served": ".*"}
    wanted = {(r.name, tuple(r.matchers)) for p in rollouts.panels() for t in p.build().targets or []
              for r in reads(expand(t.expr, variables))}  # fmt: skip
    planned = {
        (r.name, tuple(r.matchers)) for where, r in planned_reads() if where == "dashboard inference-serving.json"
    }
    assert {name for name, _ in wanted} >= {"vllm:e2e_request_latency_seconds_count", "http_requests_total",
                                            "vllm:request_success_total"}  # fmt: skip
    assert wanted <= planned, wanted - planned


def test_every_series_the_rules_dashboards_and_scaledobjects_read_is_published_on_the_live_stack(shared_stack):
    stack = shared_stack
    http = openai.DefaultHttpxClient(verify=str(stack.edge.certificates.ca))
    with openai.OpenAI(base_url=f"{stack.edge.url}/v1", api_key=stack.api_key, http_client=http, max_retries=0) as c:
        for kwargs in ({}, {"stream": True, "stream_options": {"include_usage": True}}):
            reply = c.chat.completions.create(model=stack.served_model, messages=[{"role": "user", "content": "hi"}],
                                              max_tokens=5, **kwargs)  # fmt: skip
            if kwargs:
                list(reply)
        with pytest.raises(openai.BadRequestError):
            c.chat.completions.create(model=stack.served_model, messages=[], max_tokens=5)
    time.sleep(1.5)  # the engine gauges are set at most once a second (model.py STATS_PERIOD_S)
    published = scrape(
        [stack.triton_metrics_url, f"{stack.openai_url}/metrics", f"{stack.edge.admin_url}/stats/prometheus"]
    )
    problems = unpublished(planned_reads(), published, recorded())
    assert problems == [], "\n".join(problems)


def test_the_ttft_slo_alert_fires_from_the_servers_histogram_on_real_prometheus(tmp_path, shared_stack):
    prometheus = require_tool("prometheus")
    stack = shared_stack
    # An SLO below the stand-in's first token (10 ms plus the server's and Triton's own time): every request breaks it.
    rules = rule_groups(RuleSet(scope=Scope(namespace=NS, job=JOB), thresholds=AlertThresholds(ttft_p95_seconds=0.005)))
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules_file(rules), sort_keys=False))
    labels = {"namespace": NS, "pod": "triton-local-0", "service": JOB}
    server = Target(JOB, stack.openai_url.removeprefix("http://"), labels, drop=RELAYED_FAMILIES)
    with running_prometheus(prometheus, tmp_path / "prometheus", free_port(), [server], [path]) as prom:
        deadline, state = time.monotonic() + 90, None
        with openai.OpenAI(base_url=f"{stack.openai_url}/v1", api_key="x", max_retries=0) as client:
            while time.monotonic() < deadline and state is None:
                client.completions.create(model=stack.served_model, prompt="slow first token", max_tokens=3)
                found = prom.query('ALERTS{alertname="TimeToFirstTokenP95AboveSlo"}')
                state = found[0]["metric"]["alertstate"] if found else None
                time.sleep(0.3)
    assert state in ("pending", "firing"), "the TTFT alert never became pending"
