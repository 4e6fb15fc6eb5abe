"""Admission webhooks with ``failurePolicy: Fail`` that the pinned charts register: pure data.

Until the chart's pods are Ready, the API server refuses every object such a webhook intercepts. The
plan checks that every object of an intercepted kind is ordered after the release (which waits for its
pods), and that the release is ordered after the nodes its pods need (policies/rules/ordering.py).

Sources: kubernetes-sigs/aws-load-balancer-controller helm/aws-load-balancer-controller/templates/webhook.yaml
and values.yaml at v3.5.0 (chart 3.5.0); kubernetes-sigs/lws charts/lws/templates/webhook/webhook.yaml at v0.10.0
(``mleaderworkerset.kb.io`` and ``vleaderworkerset.kb.io``, Fail on LeaderWorkerSet CREATE/UPDATE; its pod
webhooks select only pods labelled ``leaderworkerset.sigs.k8s.io/name``, which its own controller creates).
``mservice.elbv2.k8s.aws`` mutates every Service CREATE cluster-wide while ``enableServiceMutatorWebhook``
is true (its default) with ``serviceMutatorWebhookConfig.failurePolicy: Fail`` (its default); before a
controller pod is Ready no Service can be created anywhere (CoreDNS's kube-dns, every chart's Services:
aws-load-balancer-controller issue #4140). Webhooks that act only in namespaces or on objects that opt in
by label (``mpod``, ``quicid``, ``alb-target-control.*``) are left out: nothing here carries those labels.

Read and found not failing: Envoy Gateway v1.9.0's only webhook, ``topology.webhook.gateway.envoyproxy.io``
(envoyproxy/gateway charts/gateway-helm/templates/envoy-proxy-topology-injector-webhook.yaml at v1.9.0), is
``failurePolicy: Ignore``; KEDA 2.20.2's admission webhooks default to Ignore (kedacore/charts keda/values.yaml
``webhooks.failurePolicy: Ignore`` at v2.20.2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inference_platform.catalog import edge_charts, serving_charts
from inference_platform.catalog.charts import Chart


@dataclass(frozen=True)
class FailingWebhook:
    chart: Chart
    name: str
    """The webhook's name in its configuration."""
    resource_types: tuple[str, ...]
    """The pulumi-kubernetes type tokens of what it intercepts (``group/version:Kind``, ``core`` for "")."""
    everywhere: bool
    """It also intercepts objects other charts and EKS add-ons create (Services, Pods): then every other
    Helm release and EKS add-on in the stack must be ordered after it too."""
    fails_when: tuple[tuple[str, object, object], ...] = ()
    """(values path, the chart's default, the value that makes it a failing webhook), all of which must
    hold: a boolean compares by truth (an unset value is false), anything else by equality. Empty: the
    template renders it unconditionally with ``failurePolicy: Fail``."""
    source: str = ""


_LBC = edge_charts.LOAD_BALANCER_CONTROLLER
_LBC_SOURCE = (
    "kubernetes-sigs/aws-load-balancer-controller helm/aws-load-balancer-controller/templates/webhook.yaml at v3.5.0"
)

FAILING_WEBHOOKS: Final[tuple[FailingWebhook, ...]] = (
    FailingWebhook(
        _LBC,
        "mservice.elbv2.k8s.aws",
        ("core/v1:Service",),
        everywhere=True,
        fails_when=(
            ("enableServiceMutatorWebhook", True, True),
            ("serviceMutatorWebhookConfig.failurePolicy", "Fail", "Fail"),
        ),
        source=f"{_LBC_SOURCE} ({{{{- if .Values.enableServiceMutatorWebhook }}}}); values.yaml "
        "enableServiceMutatorWebhook: true, serviceMutatorWebhookConfig.failurePolicy: Fail, operations [CREATE]",
    ),
    FailingWebhook(
        _LBC,
        "vingress.elbv2.k8s.aws",
        ("networking.k8s.io/v1:Ingress",),
        everywhere=False,
        fails_when=(
            ("webhookConfig.disableIngressValidation", None, False),
            ("webhookConfig.ingressValdationFailurePolicy", "Fail", "Fail"),
        ),
        source=f"{_LBC_SOURCE} ({{{{- if not $.Values.webhookConfig.disableIngressValidation }}}})",
    ),
    FailingWebhook(
        _LBC,
        "vingressclassparams.elbv2.k8s.aws",
        ("elbv2.k8s.aws/v1beta1:IngressClassParams",),
        everywhere=False,
        source=_LBC_SOURCE,
    ),
    FailingWebhook(
        _LBC,
        "mtargetgroupbinding.elbv2.k8s.aws",
        ("elbv2.k8s.aws/v1beta1:TargetGroupBinding",),
        everywhere=False,
        source=_LBC_SOURCE,
    ),
    FailingWebhook(
        serving_charts.LEADER_WORKER_SET,
        "mleaderworkerset.kb.io",
        ("leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",),
        everywhere=False,
        source="kubernetes-sigs/lws charts/lws/templates/webhook/webhook.yaml at v0.10.0",
    ),
)


def holds(actual: object, wanted: object) -> bool:
    """Whether one ``fails_when`` condition holds for a release's value (or the chart's default)."""
    return bool(actual) is wanted if isinstance(wanted, bool) else actual == wanted
