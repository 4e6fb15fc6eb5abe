"""The endpoint picker's own metrics (issue 29): scraped by the stack's ServiceMonitor without the chart's ClusterRole
or token, and read by its alerts under the names llm-d-router v0.10.0 publishes
(tests/data/upstream/endpoint_picker_metrics_v0.10.0.json, each fact with its file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.components.observability.promql import Scope
from inference_platform.components.observability.rules import RuleSet, rule_groups

FACTS = json.loads(
    (Path(__file__).parents[2] / "data" / "upstream" / "endpoint_picker_metrics_v0.10.0.json").read_text()
)
READ = FACTS["facts"]
METRICS = READ["pkg/epp/metrics/llm_d_router_metrics.go"]
PICKER_ALERTS = {"EndpointPickerUnavailable", "EndpointPickerBlind", "EndpointPickerPicksFailing", "EndpointPickerSlow"}


def _values() -> dict:
    return picker.chart_values(serving_labels={"app": "x"}, serving_port=9000, system_affinity={}, tolerations=[])


def test_the_chart_brings_no_cluster_role_and_serves_metrics_without_a_token() -> None:
    monitoring = _values()["router"]["monitoring"]["prometheus"]
    defaults = READ["config/charts/routerlib/values.yaml"]
    # The chart's defaults would create the ClusterRole and the token Secret as soon as its monitor is on.
    assert defaults["monitoring.prometheus.auth.enabled"] is True
    assert "only if router.monitoring.prometheus.enabled" in READ["config/charts/routerlib/templates/_rbac.yaml"]
    assert monitoring["enabled"] is False
    # Auth off renders --metrics-endpoint-auth=false whatever prometheus.enabled is.
    assert monitoring["auth"]["enabled"] is False
    assert "whatever prometheus.enabled" in READ["config/charts/routerlib/templates/_deployment.yaml"]
    assert READ["pkg/epp/server/options.go"]["flag metrics-endpoint-auth"] == "bool"


def test_the_names_the_alerts_read_are_the_ones_the_picker_publishes() -> None:
    published = {**METRICS["counters"], **METRICS["histograms"]}
    for name in (picker.SCHEDULER_ATTEMPTS, picker.DATALAYER_POLL_ERRORS, picker.DATALAYER_EXTRACT_ERRORS,
                 picker.REQUEST_PROCESSING):  # fmt: skip
        assert name in published, name
    assert "status" in METRICS["counters"][picker.SCHEDULER_ATTEMPTS]
    assert READ["pkg/epp/metrics/metrics.go"]["scheduler_attempts status values"] == ["success", "failure"]
    assert READ["config/charts/routerlib/templates/_service.yaml"]["metrics port name"] == picker.METRICS_PORT_NAME
    assert READ["config/charts/routerlib/templates/_service.yaml"]["port"] == picker.METRICS_PORT


def test_the_slow_pick_threshold_is_a_bucket_boundary_under_the_gateways_timeout() -> None:
    """Half the ext_proc messageTimeout must be a bucket edge of the picker's histogram, or histogram_quantile
    interpolates the threshold inside a bucket that spans it."""
    half = picker.MESSAGE_TIMEOUT_S / 2
    assert half in METRICS["histograms"][picker.REQUEST_PROCESSING]["buckets"]
    assert picker.MESSAGE_TIMEOUT_S in METRICS["histograms"][picker.REQUEST_PROCESSING]["buckets"]


def test_every_series_a_picker_alert_reads_is_published() -> None:
    groups = rule_groups(
        RuleSet(scope=Scope(namespace="inference", job="triton"), endpoint_picker="inference-router-epp")
    )
    (picker_group,) = [g for g in groups if g["name"].endswith(".endpoint-picker")]
    assert {r["alert"] for r in picker_group["rules"]} == PICKER_ALERTS
    published = {*METRICS["counters"], *METRICS["histograms"]}
    for rule in picker_group["rules"]:
        if rule["alert"] == "EndpointPickerUnavailable":
            continue  # kube-state-metrics
        read = {token.removesuffix("_bucket") for token in rule["expr"].replace("(", " ").replace("{", " ").split()
                if token.startswith("llm_d_epp_")}  # fmt: skip
        assert read and read <= published, (rule["alert"], read - published)
        assert 'job="inference-router-epp"' in rule["expr"] and 'namespace="inference"' in rule["expr"]


@pytest.mark.parametrize(("stack", "expected"), [("prod", True), ("npu", True), ("dev", False)])
def test_the_picker_is_scraped_and_alerted_where_it_runs(stack_plan, stack, expected) -> None:
    resources = stack_plan(stack).run.resources
    monitors = [
        r for r in resources
        if r.type == "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
        and r.inputs["metadata"]["name"] == picker.service_name()
    ]  # fmt: skip
    assert bool(monitors) is expected
    rules = [r for r in resources if r.type == "kubernetes:monitoring.coreos.com/v1:PrometheusRule"]
    alerts = {rule.get("alert") for r in rules for g in r.inputs["spec"]["groups"] for rule in g["rules"]}
    assert (alerts >= PICKER_ALERTS) is expected
    if not expected:
        assert not PICKER_ALERTS & alerts
        return
    (monitor,) = monitors
    spec = monitor.inputs["spec"]
    (picker_release,) = [
        r for r in resources if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("name") == picker.RELEASE
    ]
    namespace = picker_release.inputs["namespace"]
    assert monitor.inputs["metadata"]["namespace"] == namespace
    assert spec["namespaceSelector"] == {"matchNames": [namespace]}
    assert spec["selector"] == {"matchLabels": {"app.kubernetes.io/name": picker.service_name()}}
    assert [e["port"] for e in spec["endpoints"]] == [picker.METRICS_PORT_NAME]
    # Prometheus reaches the port: the picker's NetworkPolicy admits the monitoring namespace to it.
    (policy,) = [
        r for r in resources
        if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and r.inputs["metadata"]["name"] == picker.service_name()
    ]  # fmt: skip
    admitted = [rule for rule in policy.inputs["spec"]["ingress"]
                if {"port": picker.METRICS_PORT, "protocol": "TCP"} in rule.get("ports", [])]  # fmt: skip
    assert admitted, policy.inputs["spec"]["ingress"]
