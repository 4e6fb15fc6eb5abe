"""Which pinned chart installs the CRD of each custom resource kind the platform creates: pure data.

A custom resource can only be created once its CustomResourceDefinition exists; the plan checks that
every custom resource is ordered (through ``depends_on``, property dependencies and parents) after a
Helm release that installs its CRD (policies/rules/ordering.py). Each entry was read in the chart's
own source at the version pinned in catalog/*charts.py; ``source`` names the file and tag.

How a chart installs CRDs matters for when it does not:
- from its ``crds/`` directory: always, unless the release sets ``skipCrds`` (``crds_dir=True``);
- from templates or a subchart behind a values switch (``switch``, the chart's default in
  ``switch_default``): only while that value is true.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inference_platform.catalog import edge_charts, observability_charts, serving_charts, storage_charts
from inference_platform.catalog.charts import KARPENTER, KARPENTER_CRD, Chart


@dataclass(frozen=True)
class CrdInstaller:
    chart: Chart
    """The pinned chart (its ``chart`` reference is what a Release's ``chart`` input names)."""
    source: str
    """Upstream repository, file and tag the CRD was read in."""
    crds_dir: bool = False
    """The CRD is in the chart's ``crds/`` directory: installed unless the release sets ``skipCrds``."""
    switch: str | None = None
    """Dotted values path that must be true for the chart to render the CRD (None: no switch)."""
    switch_default: bool = True
    """The chart's own default for ``switch`` (its values.yaml at the pinned tag)."""


@dataclass(frozen=True)
class CrdSource:
    group: str
    kinds: tuple[str, ...]
    installers: tuple[CrdInstaller, ...]


_SECRETS_STORE = CrdInstaller(
    storage_charts.SECRETS_STORE_CSI_DRIVER,
    "kubernetes-sigs/secrets-store-csi-driver charts/secrets-store-csi-driver/crds/"
    "secrets-store.csi.x-k8s.io_secretproviderclasses.yaml at v1.6.0",
    crds_dir=True,
)
_PROMETHEUS_CRDS = CrdInstaller(
    serving_charts.PROMETHEUS_OPERATOR_CRDS,
    "prometheus-community/helm-charts charts/prometheus-operator-crds/charts/crds/templates/"
    "crd-{servicemonitors,podmonitors,prometheusrules}.yaml at prometheus-operator-crds-31.0.1",
)
_KUBE_PROMETHEUS_STACK = CrdInstaller(
    observability_charts.KUBE_PROMETHEUS_STACK,
    "prometheus-community/helm-charts charts/kube-prometheus-stack/Chart.yaml (dependency ``crds``, "
    "condition ``crds.enabled``; values.yaml ``crds.enabled: true``) at kube-prometheus-stack-88.5.3",
    switch="crds.enabled",
)
_KEDA = CrdInstaller(
    observability_charts.KEDA,
    "kedacore/charts keda/templates/crds/crd-scaledobjects.yaml (``{{- if .Values.crds.install }}``; "
    "values.yaml ``crds.install: true``) at v2.20.2",
    switch="crds.install",
)
_KARPENTER_CRD = CrdInstaller(
    KARPENTER_CRD,
    "aws/karpenter-provider-aws charts/karpenter-crd/templates/karpenter.sh_nodepools.yaml and "
    "karpenter.k8s.aws_ec2nodeclasses.yaml at v1.14.1",
)
_KARPENTER = CrdInstaller(
    KARPENTER,
    "aws/karpenter-provider-aws charts/karpenter/crds/karpenter.sh_nodepools.yaml and "
    "karpenter.k8s.aws_ec2nodeclasses.yaml at v1.14.1",
    crds_dir=True,
)
_ENVOY_GATEWAY = CrdInstaller(
    edge_charts.ENVOY_GATEWAY,
    "envoyproxy/gateway charts/gateway-helm/charts/crds/crds/gatewayapi-crds.yaml and "
    "crds/generated/gateway.envoyproxy.io_*.yaml (subchart ``crds``, condition ``crds.enabled``; "
    "values.tmpl.yaml ``crds.enabled: true``) at v1.9.0",
    switch="crds.enabled",
)
_LEADER_WORKER_SET = CrdInstaller(
    serving_charts.LEADER_WORKER_SET,
    "kubernetes-sigs/lws charts/lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml at v0.10.0",
    crds_dir=True,
)
_LOAD_BALANCER_CONTROLLER = CrdInstaller(
    edge_charts.LOAD_BALANCER_CONTROLLER,
    "kubernetes-sigs/aws-load-balancer-controller helm/aws-load-balancer-controller/crds/crds.yaml at v3.5.0",
    crds_dir=True,
)

CRD_SOURCES: Final[tuple[CrdSource, ...]] = (
    CrdSource("secrets-store.csi.x-k8s.io", ("SecretProviderClass", "SecretProviderClassPodStatus"), (_SECRETS_STORE,)),
    CrdSource(
        "monitoring.coreos.com",
        (
            "ServiceMonitor",
            "PodMonitor",
            "PrometheusRule",
            "Probe",
            "ScrapeConfig",
            "AlertmanagerConfig",
            "Alertmanager",
            "Prometheus",
            "PrometheusAgent",
            "ThanosRuler",
        ),
        (_PROMETHEUS_CRDS, _KUBE_PROMETHEUS_STACK),
    ),
    CrdSource(
        "keda.sh",
        ("ScaledObject", "ScaledJob", "TriggerAuthentication", "ClusterTriggerAuthentication"),
        (_KEDA,),
    ),
    CrdSource("karpenter.sh", ("NodePool", "NodeClaim", "NodeOverlay"), (_KARPENTER_CRD, _KARPENTER)),
    CrdSource("karpenter.k8s.aws", ("EC2NodeClass",), (_KARPENTER_CRD, _KARPENTER)),
    CrdSource(
        "gateway.networking.k8s.io",
        (
            "GatewayClass",
            "Gateway",
            "HTTPRoute",
            "GRPCRoute",
            "ReferenceGrant",
            "BackendTLSPolicy",
            "ListenerSet",
            "TCPRoute",
            "TLSRoute",
            "UDPRoute",
        ),
        (_ENVOY_GATEWAY,),
    ),
    CrdSource(
        "gateway.envoyproxy.io",
        (
            "Backend",
            "BackendTrafficPolicy",
            "ClientTrafficPolicy",
            "EnvoyExtensionPolicy",
            "EnvoyPatchPolicy",
            "EnvoyProxy",
            "HTTPRouteFilter",
            "SecurityPolicy",
        ),
        (_ENVOY_GATEWAY,),
    ),
    CrdSource("leaderworkerset.x-k8s.io", ("LeaderWorkerSet",), (_LEADER_WORKER_SET,)),
    CrdSource(
        "elbv2.k8s.aws",
        ("IngressClassParams", "TargetGroupBinding", "ALBTargetControlConfig"),
        (_LOAD_BALANCER_CONTROLLER,),
    ),
)

BUILT_IN_GROUPS: Final[frozenset[str]] = frozenset(
    {
        "core",
        "apps",
        "batch",
        "policy",
        "autoscaling",
        "networking.k8s.io",
        "rbac.authorization.k8s.io",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "node.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "certificates.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "resource.k8s.io",
        "events.k8s.io",
        # Not a Kubernetes API: pulumi-kubernetes' own Helm, Kustomize and YAML resources.
        "helm.sh",
        "kustomize",
        "yaml",
    }
)
"""API groups the API server serves itself (pulumi-kubernetes type tokens use ``core`` for ``""``)."""


def crd_source(group: str, kind: str) -> CrdSource | None:
    """The entry for a custom resource kind, or None when no pinned chart is known to install it."""
    return next((s for s in CRD_SOURCES if s.group == group and kind in s.kinds), None)
