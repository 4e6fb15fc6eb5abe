"""The metrics pipeline: kube-prometheus-stack from its pinned chart, the platform's rules and dashboards,
and the monitors for what the chart does not scrape itself.

- Prometheus keeps ``retention`` on an encrypted gp3 volume (the cluster's KMS-encrypted StorageClass)
  and selects EVERY ServiceMonitor, PodMonitor, PrometheusRule, Probe and ScrapeConfig of the cluster:
  the chart's ``*SelectorNilUsesHelmValues`` defaults would only pick objects labelled with its own
  ``release``, which ours (the rollout's ServiceMonitor, these rules) do not carry.
- Alertmanager with its own volume; node-exporter on every node (accelerator taints tolerated) and
  kube-state-metrics with the node labels the dashboards and alerts join on (pool, accelerator,
  instance type).
- Grafana with no default admin: its password is generated, kept in a Secrets Manager secret (KMS) that
  operators read and that the Secrets Store CSI driver mounts through Grafana's Pod Identity role, and in
  the Kubernetes Secret ``grafana-admin`` the chart reads (``admin.existingSecret``) for Grafana and for
  its sidecars' reload calls; the chart creates no password Secret of its own. Its dashboard sidecar
  loads every ConfigMap labelled ``grafana_dashboard: "1"``.
- Pod Security: ``monitoring`` enforces ``baseline`` (no host access, no privilege) and warns on
  ``restricted``: the chart's pods (operator, Prometheus, Alertmanager, Grafana and its sidecar,
  admission jobs) set their own security contexts, which the plan cannot see inside a Helm release.
  node-exporter alone runs ``privileged`` in ``node-exporter``. Both are named exemptions of the
  ``pod-security-platform-namespaces-restricted`` policy in every stack's policy config.
- The Prometheus Operator CRDs come from the rollout (prometheus-operator-crds, same operator version),
  so the chart's own CRDs are off.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pulumi_random as random

from inference_platform.catalog import observability_charts
from inference_platform.catalog.charts import Chart
from inference_platform.components.common.errors import raise_if
from inference_platform.components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs
from inference_platform.components.observability import dashboards
from inference_platform.components.observability.rules import RuleSet, rule_groups
from inference_platform.components.secrets.delivery import CSI_DRIVER_NAME, SecretDelivery, SecretDeliveryArgs

DEFAULT_NAMESPACE = "monitoring"
NODE_EXPORTER_NAMESPACE = "node-exporter"
RELEASE = "kube-prometheus-stack"
GRAFANA_SERVICE_ACCOUNT = "grafana"
GRAFANA_ADMIN_USER = "platform-admin"
GRAFANA_SECRET_FILE = "admin-password"
# The Kubernetes Secret the chart reads the admin login from (``admin.existingSecret``), for Grafana and for
# its sidecars' reload calls (REQ_USERNAME/REQ_PASSWORD): grafana chart 12.11.1 templates/_pod.tpl drops
# those two when GF_SECURITY_ADMIN_USER / GF_SECURITY_ADMIN_PASSWORD__FILE are set in ``env``.
GRAFANA_ADMIN_SECRET = "grafana-admin"
GRAFANA_USER_KEY = "admin-user"
GRAFANA_PASSWORD_KEY = "admin-password"
GRAFANA_SECRET_DIR = "/etc/secrets/grafana"
DASHBOARD_LABEL = "grafana_dashboard"
PROMETHEUS_PORT = 9090
PROMETHEUS_SERVICE = f"{RELEASE}-prometheus"
# Node labels kube-state-metrics exports as kube_node_labels{label_*}: pools, vendors and types for
# the fleet and cost dashboards and the node alerts.
NODE_LABELS_ALLOWED = ("node-pool", "accelerator", "accelerator-model", "node.kubernetes.io/instance-type",
                       "karpenter.sh/capacity-type", "eks.amazonaws.com/capacityType")  # fmt: skip
TOLERATE_EVERYTHING = [{"operator": "Exists"}]
_DURATION = ("ms", "s", "m", "h", "d", "w", "y")


@dataclass(frozen=True, kw_only=True)
class Monitor:
    """A PodMonitor or ServiceMonitor for a component the chart does not scrape."""

    name: str
    namespace: str
    kind: str
    """``PodMonitor`` or ``ServiceMonitor``."""
    match_labels: Mapping[str, str]
    port: str
    relabel_node: bool = False
    """Copy the pod's node name into ``node`` (per-node exporters)."""
    path: str = "/metrics"
    """Default ``/metrics``. The HTTP path of the metrics (Envoy serves ``/stats/prometheus``)."""


@dataclass(frozen=True, kw_only=True)
class MonitoringStackArgs:
    """What the monitoring stack needs: the cluster's provider, the chart, retention, alerts and where it runs."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    cluster_name: pulumi.Input[str]
    """Required. For Grafana's Pod Identity association."""
    name_prefix: str
    """Required. Prefix of the Secrets Manager secret name (``<prefix>/grafana-admin``)."""
    kms_key_arn: pulumi.Input[str]
    """Required. The key the Grafana secret is encrypted with."""
    region: str
    """Required. Region of the secret."""
    storage_class: str
    """Required. The cluster's encrypted gp3 StorageClass (Prometheus and Alertmanager volumes)."""
    namespace: str = DEFAULT_NAMESPACE
    """Default ``monitoring``: the namespace the inference NetworkPolicy admits to the metrics port."""
    retention: str = "15d"
    """Default ``15d``. How long Prometheus keeps samples."""
    prometheus_storage_gib: int = 100
    """Default 100. Prometheus volume; retention by size stops at 90% of it."""
    alertmanager_storage_gib: int = 10
    """Default 10."""
    system_node_selector: Mapping[str, str] = field(default_factory=lambda: {"node-role": "system"})
    """Default ``node-role=system``: everything but the node exporter runs there."""
    rule_sets: Sequence[RuleSet] = field(default_factory=tuple)
    """Default none. The recording rules and alerts of each inference workload (one PrometheusRule each)."""
    monitors: Sequence[Monitor] = field(default_factory=tuple)
    """Default none. Extra scrape targets (neuron-monitor, Karpenter, the cluster autoscaler...)."""
    secret_recovery_days: int = 7
    """Default 7. Recovery window of the Grafana secret (7-30)."""
    protect: bool = False
    """Default ``False``. Protect the Grafana secret (production)."""
    install_crds: bool = False
    """Default ``False``: the rollout's prometheus-operator-crds release owns the CRDs. ``True`` when the
    stack was told not to install them (inference.monitoring.installCrds false): the chart's own then."""
    chart: Chart = observability_charts.KUBE_PROMETHEUS_STACK
    """Default: kube-prometheus-stack 88.5.3 (catalog/observability_charts.py)."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. The Prometheus Operator CRDs and the Secrets Store CSI driver."""


class MonitoringStack(pulumi.ComponentResource):
    """The metrics pipeline: kube-prometheus-stack from its pinned chart, the platform's rules and dashboards."""

    namespace: str
    prometheus_url: str
    """In-cluster URL of Prometheus (what KEDA queries)."""
    grafana_secret_arn: pulumi.Output[str]
    release_name: pulumi.Output[str]

    def __init__(self, name: str, args: MonitoringStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:observability:MonitoringStack", name, None, opts)
        ns = args.namespace
        k8s_child = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)
        first = pulumi.ResourceOptions.merge(k8s_child, pulumi.ResourceOptions(depends_on=list(args.depends_on)))
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={"name": ns, "labels": _namespace_labels("baseline")},
            opts=first,
        )
        exporter_namespace = k8s.core.v1.Namespace(
            f"{name}-node-exporter-namespace",
            metadata={"name": NODE_EXPORTER_NAMESPACE, "labels": _namespace_labels("privileged")},
            opts=first,
        )
        after_namespace = pulumi.ResourceOptions.merge(k8s_child, pulumi.ResourceOptions(depends_on=[namespace]))

        secret_opts = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        secret = aws.secretsmanager.Secret(
            f"{name}-grafana-admin",
            name_prefix=f"{args.name_prefix}/grafana-admin-",
            description="Grafana admin password (platform-admin); read by Grafana through the secrets CSI driver",
            kms_key_id=args.kms_key_arn,
            recovery_window_in_days=args.secret_recovery_days,
            opts=secret_opts,
        )
        password = random.RandomPassword(
            f"{name}-grafana-admin-password", length=32, special=False, opts=pulumi.ResourceOptions(parent=self)
        )
        version = aws.secretsmanager.SecretVersion(
            f"{name}-grafana-admin-value",
            secret_id=secret.id,
            secret_string=password.result,
            opts=secret_opts,
        )
        # Same password as the Secrets Manager copy operators read; etcd encrypts it with the cluster key.
        admin = k8s.core.v1.Secret(
            f"{name}-grafana-admin-login",
            metadata={"name": GRAFANA_ADMIN_SECRET, "namespace": ns, "labels": _labels()},
            type="Opaque",
            string_data={GRAFANA_USER_KEY: GRAFANA_ADMIN_USER, GRAFANA_PASSWORD_KEY: password.result},
            opts=after_namespace,
        )
        role = PodIdentityRole(
            f"{name}-grafana",
            PodIdentityRoleArgs(
                cluster_name=args.cluster_name,
                namespace=ns,
                service_account=GRAFANA_SERVICE_ACCOUNT,
                description="Grafana: reads its admin password from Secrets Manager",
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        delivery = SecretDelivery(
            f"{name}-grafana-secrets",
            SecretDeliveryArgs(
                k8s_provider=args.k8s_provider,
                namespace=ns,
                service_account=GRAFANA_SERVICE_ACCOUNT,
                role_name=role.role_name,
                files={GRAFANA_SECRET_FILE: secret.arn},
                kms_key_arn=args.kms_key_arn,
                region=args.region,
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace, version]),
        )
        release = k8s.helm.v3.Release(
            f"{name}-release",
            name=RELEASE,
            **args.chart.release_source(),
            namespace=ns,
            create_namespace=False,
            values=stack_values(args, delivery.class_name),
            opts=pulumi.ResourceOptions.merge(
                after_namespace, pulumi.ResourceOptions(depends_on=[delivery, role, exporter_namespace, admin])
            ),
        )
        after_release = pulumi.ResourceOptions.merge(k8s_child, pulumi.ResourceOptions(depends_on=[release]))
        for rules in args.rule_sets:
            scope = rules.scope
            k8s.apiextensions.CustomResource(
                f"{name}-rules-{scope.namespace}-{scope.job}",
                api_version="monitoring.coreos.com/v1",
                kind="PrometheusRule",
                metadata={"name": f"{scope.job}-rules", "namespace": scope.namespace, "labels": _labels()},
                spec={"groups": rule_groups(rules)},
                opts=after_release,
            )
        for file_name, model in dashboards.render().items():
            stem = file_name.removesuffix(".json")
            k8s.core.v1.ConfigMap(
                f"{name}-dashboard-{stem}",
                metadata={"name": f"dashboard-{stem}", "namespace": ns, "labels": {**_labels(), DASHBOARD_LABEL: "1"}},
                data={file_name: json.dumps(model, sort_keys=True)},
                opts=after_namespace,
            )
        for monitor in args.monitors:
            k8s.apiextensions.CustomResource(
                f"{name}-monitor-{monitor.name}",
                api_version="monitoring.coreos.com/v1",
                kind=monitor.kind,
                metadata={"name": monitor.name, "namespace": monitor.namespace, "labels": _labels()},
                spec=monitor_spec(monitor),
                opts=after_release,
            )
        self.namespace = ns
        self.prometheus_url = f"http://{PROMETHEUS_SERVICE}.{ns}.svc:{PROMETHEUS_PORT}"
        self.grafana_secret_arn = secret.arn
        self.release_name = release.name
        self.register_outputs(
            {
                "namespace": self.namespace,
                "prometheus_url": self.prometheus_url,
                "grafana_secret_arn": self.grafana_secret_arn,
                "release_name": self.release_name,
            }
        )


def stack_values(args: MonitoringStackArgs, grafana_secret_class: str) -> dict[str, Any]:
    """kube-prometheus-stack values (pure, so tests read exactly what the release gets)."""
    system = dict(args.system_node_selector)
    select_all = {
        f"{kind}SelectorNilUsesHelmValues": False
        for kind in ("serviceMonitor", "podMonitor", "rule", "probe", "scrapeConfig")
    }
    return {
        "crds": {"enabled": args.install_crds},
        "prometheusOperator": {"nodeSelector": system},
        "prometheus": {
            "prometheusSpec": {
                **select_all,
                "retention": args.retention,
                "retentionSize": f"{int(args.prometheus_storage_gib * 0.9)}GB",
                "nodeSelector": system,
                "resources": {"requests": {"cpu": "500m", "memory": "4Gi"}, "limits": {"memory": "8Gi"}},
                "storageSpec": _volume(args.storage_class, args.prometheus_storage_gib),
            }
        },
        "alertmanager": {
            "enabled": True,
            "alertmanagerSpec": {
                "nodeSelector": system,
                "storage": _volume(args.storage_class, args.alertmanager_storage_gib),
            },
        },
        "grafana": grafana_values(system, grafana_secret_class),
        "kube-state-metrics": {
            "nodeSelector": system,
            "metricLabelsAllowlist": [f"nodes=[{','.join(NODE_LABELS_ALLOWED)}]"],
        },
        # On every node, accelerator pools included (their taints tolerated), in its own privileged
        # namespace: it reads the host (hostNetwork, hostPID, hostPath), which nothing else here may.
        "prometheus-node-exporter": {"namespaceOverride": NODE_EXPORTER_NAMESPACE, "tolerations": TOLERATE_EVERYTHING},
    }


def grafana_values(system: Mapping[str, str], secret_class: str) -> dict[str, Any]:
    return {
        "enabled": True,
        "nodeSelector": dict(system),
        # No default admin: with admin.existingSecret the chart neither creates its admin Secret nor passes
        # kube-prometheus-stack's default "prom-operator" password; Grafana and its sidecars (REQ_USERNAME,
        # REQ_PASSWORD) read the login from that Secret. Never GF_SECURITY_ADMIN_* in env: chart 12.11.1
        # (templates/_pod.tpl) then drops the sidecars' credentials and their reloads fail.
        "admin": {
            "existingSecret": GRAFANA_ADMIN_SECRET,
            "userKey": GRAFANA_USER_KEY,
            "passwordKey": GRAFANA_PASSWORD_KEY,
        },
        "env": {
            "GF_USERS_ALLOW_SIGN_UP": "false",
            "GF_AUTH_ANONYMOUS_ENABLED": "false",
        },
        "serviceAccount": {"create": True, "name": GRAFANA_SERVICE_ACCOUNT},
        "extraSecretMounts": [
            {
                "name": "admin-password",
                "mountPath": GRAFANA_SECRET_DIR,
                "readOnly": True,
                "csi": {
                    "driver": CSI_DRIVER_NAME,
                    "readOnly": True,
                    "volumeAttributes": {"secretProviderClass": secret_class},
                },
            }
        ],
        "sidecar": {
            "dashboards": {
                "enabled": True,
                "label": DASHBOARD_LABEL,
                "labelValue": "1",
            }
        },
        "persistence": {"enabled": False},
    }


def monitor_spec(monitor: Monitor) -> dict[str, Any]:
    endpoint: dict[str, Any] = {"port": monitor.port, "path": monitor.path, "interval": "30s"}
    if monitor.relabel_node:
        endpoint["relabelings"] = [
            {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}
        ]
    key = "podMetricsEndpoints" if monitor.kind == "PodMonitor" else "endpoints"
    return {
        "selector": {"matchLabels": dict(monitor.match_labels)},
        "namespaceSelector": {"matchNames": [monitor.namespace]},
        key: [endpoint],
    }


def _volume(storage_class: str, gib: int) -> dict[str, Any]:
    return {
        "volumeClaimTemplate": {
            "spec": {
                "storageClassName": storage_class,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": f"{gib}Gi"}},
            }
        }
    }


def _namespace_labels(level: str) -> dict[str, str]:
    return {
        "pod-security.kubernetes.io/enforce": level,
        "pod-security.kubernetes.io/warn": "restricted",
        "app.kubernetes.io/part-of": "inference-platform",
    }


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/part-of": "inference-platform"}


def _validate(args: MonitoringStackArgs) -> None:
    problems = []
    if not args.retention[:-1].isdigit() or not args.retention.endswith(_DURATION):
        problems.append(f"retention={args.retention!r} is not a Prometheus duration such as 15d")
    if args.prometheus_storage_gib < 10 or args.alertmanager_storage_gib < 1:
        problems.append(
            f"prometheus_storage_gib={args.prometheus_storage_gib} (>= 10) and alertmanager_storage_gib="
            f"{args.alertmanager_storage_gib} (>= 1)"
        )
    if not 7 <= args.secret_recovery_days <= 30:
        problems.append(f"secret_recovery_days={args.secret_recovery_days} must be 7-30")
    for monitor in args.monitors:
        if monitor.kind not in ("PodMonitor", "ServiceMonitor"):
            problems.append(f"monitor {monitor.name}: kind {monitor.kind!r} is not PodMonitor or ServiceMonitor")
    raise_if("MonitoringStack", problems)
