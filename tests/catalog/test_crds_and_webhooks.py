"""Which pinned chart installs which CRD, and which Fail webhooks the pinned charts register (issue 17 §3).

Each entry is an upstream fact read in the chart's own source at the pinned tag (catalog/crds.py,
catalog/webhooks.py): the tests pin that the table names those pins, that every entry cites its
upstream file and tag, and the facts the first ``pulumi up`` depends on.
"""

from __future__ import annotations

import re

import pytest

from inference_platform.catalog import (
    charts,
    edge_charts,
    observability_charts,
    serving_charts,
    storage_charts,
)
from inference_platform.catalog.chart_pods import WAITED_PODS
from inference_platform.catalog.charts import Chart
from inference_platform.catalog.crds import BUILT_IN_GROUPS, CRD_SOURCES, crd_source
from inference_platform.catalog.webhooks import FAILING_WEBHOOKS, holds

PINNED = {
    value
    for module in (charts, edge_charts, observability_charts, serving_charts, storage_charts)
    for value in vars(module).values()
    if isinstance(value, Chart)
}
INSTALLERS = [i for s in CRD_SOURCES for i in s.installers]
TAG = re.compile(r" at (v?\d+\.\d+\.\d+|[a-z-]+-\d+\.\d+\.\d+)$")


@pytest.mark.parametrize("installer", INSTALLERS, ids=lambda i: f"{i.chart.chart}")
def test_every_installer_is_a_pinned_chart_and_cites_file_and_tag(installer):
    assert installer.chart in PINNED
    assert TAG.search(installer.source), installer.source
    # The tag read is the pinned version (chart version or app version of the same release).
    tag = TAG.search(installer.source).group(1)
    assert installer.chart.version.lstrip("v") in tag or tag.endswith(installer.chart.version), (tag, installer.chart)


def test_each_kind_has_one_entry_and_no_built_in_group_is_claimed():
    kinds = [(s.group, k) for s in CRD_SOURCES for k in s.kinds]
    assert len(kinds) == len(set(kinds))
    assert not {s.group for s in CRD_SOURCES} & BUILT_IN_GROUPS


@pytest.mark.parametrize(
    ("group", "kind", "chart", "how"),
    [
        # kubernetes-sigs/secrets-store-csi-driver charts/secrets-store-csi-driver/crds/ at v1.6.0
        ("secrets-store.csi.x-k8s.io", "SecretProviderClass", "secrets-store-csi-driver", "crds/"),
        # prometheus-community/helm-charts charts/prometheus-operator-crds/charts/crds/templates/ at
        # prometheus-operator-crds-31.0.1; kube-prometheus-stack-88.5.3 behind crds.enabled (default true)
        ("monitoring.coreos.com", "ServiceMonitor", "prometheus-operator-crds", None),
        ("monitoring.coreos.com", "PrometheusRule", "kube-prometheus-stack", "crds.enabled"),
        ("monitoring.coreos.com", "PodMonitor", "prometheus-operator-crds", None),
        # kedacore/charts keda/templates/crds/crd-scaledobjects.yaml behind crds.install at v2.20.2
        ("keda.sh", "ScaledObject", "keda", "crds.install"),
        # aws/karpenter-provider-aws charts/karpenter-crd/templates/ and charts/karpenter/crds/ at v1.14.1
        ("karpenter.sh", "NodePool", "oci://public.ecr.aws/karpenter/karpenter-crd", None),
        ("karpenter.k8s.aws", "EC2NodeClass", "oci://public.ecr.aws/karpenter/karpenter", "crds/"),
        # envoyproxy/gateway charts/gateway-helm/charts/crds/crds/ (subchart, crds.enabled) at v1.9.0
        ("gateway.networking.k8s.io", "GRPCRoute", "oci://docker.io/envoyproxy/gateway-helm", "crds.enabled"),
        ("gateway.networking.k8s.io", "ReferenceGrant", "oci://docker.io/envoyproxy/gateway-helm", "crds.enabled"),
        ("gateway.envoyproxy.io", "SecurityPolicy", "oci://docker.io/envoyproxy/gateway-helm", "crds.enabled"),
        # kubernetes-sigs/lws charts/lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml at v0.10.0
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet", "oci://registry.k8s.io/lws/charts/lws", "crds/"),
        # kubernetes-sigs/aws-load-balancer-controller helm/aws-load-balancer-controller/crds/crds.yaml at v3.5.0
        ("elbv2.k8s.aws", "IngressClassParams", "aws-load-balancer-controller", "crds/"),
    ],
)
def test_upstream_crd_facts(group, kind, chart, how):
    source = crd_source(group, kind)
    assert source is not None
    (installer,) = [i for i in source.installers if i.chart.chart == chart]
    if how == "crds/":
        assert installer.crds_dir and installer.switch is None
    elif how is None:
        assert not installer.crds_dir and installer.switch is None
    else:
        assert installer.switch == how and installer.switch_default is True


def test_unknown_kinds_have_no_source():
    assert crd_source("example.com", "Widget") is None
    assert crd_source("keda.sh", "Widget") is None


def test_the_load_balancer_controllers_service_webhook_fails_by_default():
    # kubernetes-sigs/aws-load-balancer-controller helm/aws-load-balancer-controller at v3.5.0:
    # templates/webhook.yaml renders mservice.elbv2.k8s.aws when enableServiceMutatorWebhook (values.yaml:
    # true) with serviceMutatorWebhookConfig.failurePolicy (values.yaml: Fail), on Service CREATE.
    assert edge_charts.LOAD_BALANCER_CONTROLLER.version == "3.5.0"
    (service,) = [w for w in FAILING_WEBHOOKS if w.name == "mservice.elbv2.k8s.aws"]
    assert service.chart == edge_charts.LOAD_BALANCER_CONTROLLER and service.everywhere
    assert service.resource_types == ("core/v1:Service",)
    assert dict((p, d) for p, d, _ in service.fails_when) == {
        "enableServiceMutatorWebhook": True,
        "serviceMutatorWebhookConfig.failurePolicy": "Fail",
    }
    assert all(holds(default, wanted) for _, default, wanted in service.fails_when)
    assert "templates/webhook.yaml at v3.5.0" in service.source
    # Its Ingress validation fails by default too (webhookConfig.ingressValdationFailurePolicy: Fail).
    (ingress,) = [w for w in FAILING_WEBHOOKS if w.name == "vingress.elbv2.k8s.aws"]
    assert all(holds(default, wanted) for _, default, wanted in ingress.fails_when)
    assert not ingress.everywhere


def test_holds_compares_booleans_by_truth_and_others_by_value():
    assert holds(None, False) and holds(True, True) and not holds(False, True)
    assert holds("Fail", "Fail") and not holds("Ignore", "Fail")


def test_envoy_gateway_leaves_its_waited_pods_unplaced_by_default():
    # envoyproxy/gateway charts/gateway-helm at v1.9.0: the envoy-gateway Deployment and the certgen
    # pre-install hook Job take their nodeSelector from values (values.tmpl.yaml: both {}).
    (pods,) = WAITED_PODS
    assert pods.chart == edge_charts.ENVOY_GATEWAY and pods.chart.version == "v1.9.0"
    assert pods.node_selectors == ("deployment.pod.nodeSelector", "certgen.job.nodeSelector")
    assert pods.source.endswith("at v1.9.0")


def test_the_leader_worker_set_chart_refuses_groups_until_its_manager_is_ready():
    # kubernetes-sigs/lws charts/lws/templates/webhook/webhook.yaml at v0.10.0: mleaderworkerset.kb.io (and
    # vleaderworkerset.kb.io) with failurePolicy Fail on leaderworkersets CREATE/UPDATE, unconditionally.
    assert serving_charts.LEADER_WORKER_SET.version == "0.10.0"
    (lws,) = [w for w in FAILING_WEBHOOKS if w.chart == serving_charts.LEADER_WORKER_SET]
    assert lws.resource_types == ("leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",) and lws.fails_when == ()
    assert not lws.everywhere and lws.source.endswith("at v0.10.0")
