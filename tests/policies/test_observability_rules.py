"""Observability and autoscaling rules: a passing and a failing case for each."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy, scaled_object_spec
from inference_platform.components.observability.monitoring_stack import GRAFANA_SERVICE_ACCOUNT, grafana_values
from inference_platform.components.observability.promql import Scope
from inference_platform.components.observability.rules import RuleSet, rule_groups

SCOPE = Scope(namespace="inference", job="triton")
GOOD_SPEC = scaled_object_spec(ScalingPolicy(scope=SCOPE, prometheus_url="http://p:9090"), ScaleTarget(name="triton"))


def _scaled(spec):
    return lambda: k8s.apiextensions.CustomResource(
        "so", api_version="keda.sh/v1alpha1", kind="ScaledObject", metadata={"name": "t", "namespace": "x"}, spec=spec
    )


def test_the_platforms_scaled_object_passes(violations):
    assert violations(_scaled(GOOD_SPEC), "autoscaling-on-llm-signals") == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"triggers": [{"type": "prometheus", "name": "g", "metadata": {"query": "avg(DCGM_FI_DEV_GPU_UTIL)"}}]},
            "accelerator utilisation",
        ),
        ({"triggers": [{"type": "cpu", "metadata": {"value": "70"}}]}, "a cpu trigger"),
        ({"maxReplicaCount": None}, "maxReplicaCount is unset"),
        ({"advanced": {}}, "scale-down stabilisation is unset"),
    ],
)
def test_scaling_on_utilisation_without_ceiling_or_fast_down_is_refused(violations, change, expected):
    spec = {k: v for k, v in {**GOOD_SPEC, **change}.items() if v is not None}
    found = violations(_scaled(spec), "autoscaling-on-llm-signals")
    assert any(expected in v.message for v in found), [v.message for v in found]


def _rule(groups):
    return lambda: k8s.apiextensions.CustomResource(
        "r",
        api_version="monitoring.coreos.com/v1",
        kind="PrometheusRule",
        metadata={"name": "r"},
        spec={"groups": groups},
    )


def test_the_platforms_alerts_are_documented(violations):
    assert (
        violations(_rule(rule_groups(RuleSet(scope=SCOPE, hpa="keda-hpa-triton"))), "alerts-have-severity-and-runbook")
        == []
    )


def test_an_alert_without_severity_or_runbook_is_refused(violations):
    groups = [{"name": "g", "rules": [{"alert": "Bad", "expr": "up == 0", "labels": {"severity": "urgent"}}]}]
    messages = [v.message for v in violations(_rule(groups), "alerts-have-severity-and-runbook")]
    assert any("severity is 'urgent'" in m for m in messages) and any("no runbook_url" in m for m in messages)


def _release(values):
    return lambda: k8s.helm.v3.Release(
        "kps", chart="kube-prometheus-stack", version="88.5.3", namespace="monitoring", values=values
    )


def test_grafana_reading_its_login_from_an_existing_secret_passes(violations):
    values = {"grafana": grafana_values({"node-role": "system"}, f"{GRAFANA_SERVICE_ACCOUNT}-secrets")}
    assert violations(_release(values), "grafana-no-default-admin") == []


@pytest.mark.parametrize(
    ("grafana", "expected"),
    [
        ({}, "chart's default"),
        ({"adminPassword": "prom-operator", "admin": {"existingSecret": "s"}}, "literal"),
        # grafana chart 12.11.1 templates/_pod.tpl: env GF_SECURITY_ADMIN_* drops REQ_USERNAME/REQ_PASSWORD.
        ({"env": {"GF_SECURITY_ADMIN_USER": "a", "GF_SECURITY_ADMIN_PASSWORD__FILE": "/f"}}, "reload credentials"),
        ({"admin": {"existingSecret": "s"}, "env": {"GF_SECURITY_ADMIN_PASSWORD__FILE": "/f"}}, "REQ_PASSWORD"),
    ],
)
def test_default_or_literal_grafana_admin_is_refused(violations, grafana, expected):
    found = violations(_release({"grafana": grafana}), "grafana-no-default-admin")
    assert any(expected in v.message for v in found), [v.message for v in found]


def _monitor(selector):
    return lambda: k8s.apiextensions.CustomResource(
        "m",
        api_version="monitoring.coreos.com/v1",
        kind="PodMonitor",
        metadata={"name": "m", "namespace": "x"},
        spec={"selector": {}, "namespaceSelector": selector, "podMetricsEndpoints": [{"port": "metrics"}]},
    )


def test_monitors_name_their_namespaces(violations):
    assert violations(_monitor({"matchNames": ["kube-system"]}), "monitors-scoped") == []
    (found,) = violations(_monitor({"any": True}), "monitors-scoped")
    assert "matchNames" in found.message
