"""The metrics pipeline component: the pinned chart with selectors that pick up every monitor and rule,
encrypted volumes, Grafana's admin from Secrets Manager, the PrometheusRule and the dashboard ConfigMaps."""

from __future__ import annotations

import json

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.observability.monitoring_stack import Monitor, MonitoringStack, MonitoringStackArgs
from inference_platform.components.observability.promql import Scope
from inference_platform.components.observability.rules import RuleSet
from tests.components.storage.test_fsx_csi import provider
from tests.conftest import by_type, one

SCOPE = Scope(namespace="inference", job="triton")
KEY = "arn:aws:kms:us-west-2:123456789012:key/abc"


def args(**changes) -> MonitoringStackArgs:
    base = dict(
        k8s_provider=provider(),
        cluster_name="c",
        name_prefix="p-dev",
        kms_key_arn=KEY,
        region="us-west-2",
        storage_class="gp3",
        rule_sets=[RuleSet(scope=SCOPE, hpa="keda-hpa-triton")],
        monitors=[
            Monitor(
                name="neuron-monitor",
                namespace="kube-system",
                kind="PodMonitor",
                match_labels={"app": "neuron-monitor"},
                port="metrics",
                relabel_node=True,
            )
        ],
    )
    return MonitoringStackArgs(**{**base, **changes})


def test_the_stack_registers_chart_rules_dashboards_monitors_and_grafanas_secret(run_components):
    run = run_components(lambda: MonitoringStack("monitoring", args()))
    release = one(run.resources, "monitoring-release")
    values = release.inputs["values"]
    assert release.inputs["chart"] == "kube-prometheus-stack" and release.inputs["version"] == "88.5.3"
    spec = values["prometheus"]["prometheusSpec"]
    for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "gp3" and spec["retention"] == "15d"
    assert values["crds"]["enabled"] is False
    grafana = values["grafana"]
    assert "adminPassword" not in grafana
    # kube-prometheus-stack 88.5.3 charts/kube-prometheus-stack/Chart.yaml (prometheus-community/helm-charts, tag
    # kube-prometheus-stack-88.5.3) depends on grafana 12.11.1 from grafana-community.github.io/helm-charts.
    # grafana chart 12.11.1 (grafana-community/helm-charts, tag grafana-12.11.1) templates/_pod.tpl renders the
    # sidecars' REQ_USERNAME/REQ_PASSWORD only while env has no GF_SECURITY_ADMIN_USER(__FILE) and no
    # GF_SECURITY_ADMIN_PASSWORD(__FILE), from admin.existingSecret's userKey/passwordKey.
    assert not [k for k in grafana["env"] if k.startswith("GF_SECURITY_ADMIN")]
    assert grafana["admin"] == {
        "existingSecret": "grafana-admin",
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
    login = one(run.resources, "monitoring-grafana-admin-login")
    assert login.type == "kubernetes:core/v1:Secret" and login.inputs["metadata"]["name"] == "grafana-admin"
    data = login.inputs["stringData"]
    data = data.get("value", data)  # a secret (the generated password): recorded wrapped
    assert set(data) == {"admin-user", "admin-password"} and data["admin-user"] == "platform-admin"
    assert grafana["sidecar"]["dashboards"]["label"] == "grafana_dashboard"
    secret = one(run.resources, "monitoring-grafana-admin")
    assert secret.type == "aws:secretsmanager/secret:Secret" and secret.inputs["kmsKeyId"] == KEY
    (rule,) = by_type(run.resources, "kubernetes:monitoring.coreos.com/v1:PrometheusRule")
    assert rule.inputs["metadata"]["namespace"] == "inference" and len(rule.inputs["spec"]["groups"]) >= 4
    maps = by_type(run.resources, "kubernetes:core/v1:ConfigMap")
    dashboards = [m for m in maps if m.inputs["metadata"]["labels"].get("grafana_dashboard") == "1"]
    assert len(dashboards) == 4
    for m in dashboards:
        (text,) = m.inputs["data"].values()
        assert json.loads(text)["panels"]
    (monitor,) = by_type(run.resources, "kubernetes:monitoring.coreos.com/v1:PodMonitor")
    endpoint = monitor.inputs["spec"]["podMetricsEndpoints"][0]
    assert endpoint["relabelings"][0]["targetLabel"] == "node"
    namespaces = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        for r in by_type(run.resources, "kubernetes:core/v1:Namespace")
    }
    assert namespaces == {"monitoring": "baseline", "node-exporter": "privileged"}
    association = by_type(run.resources, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association[0].inputs["serviceAccount"] == "grafana"


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"retention": "forever"}, "retention"),
        ({"prometheus_storage_gib": 1}, "prometheus_storage_gib"),
        ({"secret_recovery_days": 1}, "secret_recovery_days"),
    ],
)
def test_bad_args_are_refused(run_components, changes, words):
    with pytest.raises(ComponentArgsError, match=words):
        MonitoringStack("m", args(**changes))
