"""The stack's metrics pipeline and autoscaling: kube-prometheus-stack with the platform's rules,
dashboards and monitors, then KEDA and the rollout's ScaledObject (KEDA queries that Prometheus), and one
ScaledObject per other model's current version (``inference-platform:models``; the canary keeps its replicas while
it is measured).

Everything is chosen from the settings: the rollout's scope (namespace, Service, backend), the SLOs of
serving.slo and verification.slo, the day bounds (explicit, else the capacity plan's, else the rollout's
replicas up to what the pool holds) and the night schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from inference_platform import catalog
from inference_platform.catalog.alert_thresholds import AlertThresholds
from inference_platform.catalog.endpoint_picker import METRICS_PORT_NAME, service_name
from inference_platform.catalog.pool_profile import LABEL_NODE_ROLE, ROLE_SYSTEM
from inference_platform.components.autoscaling.keda import Keda, KedaArgs
from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy
from inference_platform.components.autoscaling.scaled_workload import ScaledWorkload, ScaledWorkloadArgs
from inference_platform.components.autoscaling.standby import Standby, StandbyArgs
from inference_platform.components.batch.keda_objects import QueueAuthentication, QueueAuthenticationArgs
from inference_platform.components.compute.accelerator_software import NEURON_MONITOR_LABELS
from inference_platform.components.edge.gateway_api import PROXY_LABEL
from inference_platform.components.observability.monitoring_stack import Monitor, MonitoringStack, MonitoringStackArgs
from inference_platform.components.observability.promql import Scope
from inference_platform.components.observability.rules import RuleSet
from inference_platform.components.serving.inference_service import DEFAULT_APP_NAME, InferenceService
from inference_platform.infra.batch import Batch, batch_monitors
from inference_platform.infra.cluster import Compute
from inference_platform.infra.edge import GATEWAY_NAME, Edge
from inference_platform.infra.foundation import Foundation
from inference_platform.infra.inference import Inference
from inference_platform.infra.models import Models
from inference_platform.infra.storage import Storage
from inference_platform.infra.token_meters import token_meters
from inference_platform.settings import Settings
from inference_platform.settings.derived import day_bounds, planned_replicas, target_requests

SYSTEM = {LABEL_NODE_ROLE: ROLE_SYSTEM}
KUBE_SYSTEM = "kube-system"
# The node provisioner's chart release (in kube-system) -> the port name its metrics Service exposes.
PROVISIONER_METRICS_PORTS = {"karpenter": "http-metrics", "cluster-autoscaler": "http"}


@dataclass(frozen=True)
class Observability:
    stack: MonitoringStack | None
    keda: Keda | None = None
    scaled: ScaledWorkload | None = None
    standby: Standby | None = None
    model_scaling: dict[str, ScaledWorkload] | None = None
    """Rollout key -> the ScaledObject of another model's current version."""


def build_observability(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    inference: Inference,
    edge: Edge | None,
    batch: Batch | None = None,
    models: Models | None = None,
) -> Observability:
    if not settings.observability.enabled:
        return Observability(None)
    if compute.storage_class_name is None:
        raise pulumi.RunError("observability: the cluster has no encrypted gp3 StorageClass for Prometheus")
    service = inference.service
    scope = Scope(
        namespace=storage.inference.namespace,
        job=service.service_name if service else DEFAULT_APP_NAME,
        backend="neuron" if settings.serving.backend == "neuron" else "tensorrtllm",
    )
    bounds = day_bounds(settings)
    scaled = settings.autoscaling.enabled and service is not None and bounds is not None
    stack = _monitoring_stack(settings, foundation, compute, storage, inference, edge, scope, scaled, batch)
    if not scaled or service is None or bounds is None:
        return Observability(stack)
    keda = Keda(
        "keda",
        KedaArgs(k8s_provider=compute.provider, system_node_selector=SYSTEM),
        # Its pods run on the system nodes: Helm waits for them. With the batch lane, its queue role first:
        # Pod Identity injects credentials when a pod is created.
        opts=pulumi.ResourceOptions(depends_on=[compute.system_nodes, *([batch.monitor_role] if batch else [])]),
    )
    workload = _scaled_workload(settings, compute, service, stack, keda, scope, bounds, batch)
    standby = _standby(settings, compute, service, scope)
    return Observability(stack, keda, workload, standby, _model_scaling(models, compute, stack, keda, scope))


def _model_scaling(
    models: Models | None, compute: Compute, stack: MonitoringStack, keda: Keda, primary: Scope
) -> dict[str, ScaledWorkload]:
    """Each other model's current version scaled as the stack's own is, on its own series (its Service is its
    ``job``), its own batch size and pool: the stack's autoscaling settings over the model's resolved sections, the
    bounds its rollout was planned with (``infra.inference._autoscaled_max``). The batch lane feeds the stack's own
    model only, so no backfill trigger here."""
    out: dict[str, ScaledWorkload] = {}
    for key, (service, scoped) in (models.scaled if models is not None else {}).items():
        bounds = day_bounds(scoped)
        if bounds is None:
            continue
        scope = Scope(
            namespace=primary.namespace,
            job=service.service_name,
            backend="neuron" if scoped.serving.backend == "neuron" else "tensorrtllm",
        )
        out[key] = _scaled_workload(
            scoped, compute, service, stack, keda, scope, bounds, name=f"inference-autoscaling-{key}", export=False
        )
    if out:
        pulumi.export(
            "modelAutoscaling",
            {key: {"scaledObject": w.scaled_object_name, "hpa": w.hpa_name} for key, w in out.items()},
        )
    return out


def _standby(settings: Settings, compute: Compute, service: InferenceService, scope: Scope) -> Standby | None:
    """coldStart.standbyReplicas placeholders beside the autoscaled rollout (settings refuse them for multi-node
    replicas and without autoscaling)."""
    replicas = settings.cold_start.standby_replicas
    if not replicas or service.workload_kind != "Deployment":
        return None
    return Standby(
        "inference-standby",
        StandbyArgs(
            k8s_provider=compute.provider,
            namespace=scope.namespace,
            workload_name=service.workload_name,
            pod_spec=service.placeholder_pod_spec,
            replicas=replicas,
            depends_on=[service],
        ),
    )


def _monitoring_stack(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    inference: Inference,
    edge: Edge | None,
    scope: Scope,
    scaled: bool,
    batch: Batch | None = None,
) -> MonitoringStack:
    cfg, service, bounds = settings.observability, inference.service, day_bounds(settings)
    hpa = f"keda-hpa-{service.workload_name}" if scaled and service is not None else None
    picker = edge is not None and settings.edge.routing.resolved_mode(settings.environment) == "inference-pool"
    rules = RuleSet(
        scope=scope,
        vendor="neuron" if scope.backend == "neuron" else "nvidia",
        hpa=hpa,
        expect_serving=service is not None and (bounds is None or bounds[0] > 0),
        edge_clusters="httproute/.*" if edge is not None else None,
        endpoint_picker=service_name() if picker else None,
        thresholds=_thresholds(settings),
        token_meters=token_meters(settings, GATEWAY_NAME) if edge is not None else (),
        token_weights=settings.edge.token_limits.weights.weights(),
    )
    # The CRDs first; the inference namespace too, where the PrometheusRule goes.
    releases = inference.controllers.releases if inference.controllers else {}
    depends: list[pulumi.Resource] = [*releases.values()]
    namespace = storage.namespaces.get(storage.inference)
    if namespace is not None:
        depends.append(namespace)
    # Its pods run on the system nodes (Helm waits for them); Grafana's SecretProviderClass needs the CRD.
    depends.append(compute.system_nodes)
    if storage.secrets_store is not None:
        depends.append(storage.secrets_store)
    stack = MonitoringStack(
        "monitoring",
        MonitoringStackArgs(
            k8s_provider=compute.provider,
            cluster_name=compute.cluster_name,
            name_prefix=settings.name_prefix,
            kms_key_arn=foundation.keys.storage_key_arn,
            region=settings.region.name,
            storage_class=compute.storage_class_name or "",
            namespace=settings.inference.monitoring.namespace,
            retention=cfg.retention,
            prometheus_storage_gib=cfg.prometheus_storage_gib,
            alertmanager_storage_gib=cfg.alertmanager_storage_gib,
            system_node_selector=SYSTEM,
            rule_sets=[rules],
            monitors=[*_monitors(compute, edge, scope.namespace if picker else None), *batch_monitors(batch)],
            secret_recovery_days=settings.secrets.recovery_window(settings.environment),
            protect=settings.production,
            install_crds="prometheus_crds" not in releases,
            depends_on=depends,
        ),
    )
    pulumi.export(
        "monitoring",
        {
            "namespace": stack.namespace,
            "prometheusUrl": stack.prometheus_url,
            "grafanaAdminSecretArn": stack.grafana_secret_arn,
        },
    )
    return stack


def _scaled_workload(
    settings: Settings,
    compute: Compute,
    service: InferenceService,
    stack: MonitoringStack,
    keda: Keda,
    scope: Scope,
    bounds: tuple[int, int],
    batch: Batch | None = None,
    *,
    name: str = "inference-autoscaling",
    export: bool = True,
) -> ScaledWorkload:
    auto = settings.autoscaling
    night = auto.schedule(settings.production)
    # The lane's queue holds the day floor at night while batch work waits (batch.backfill).
    backfill = batch.signal if batch and settings.batch.backfill.hold_floor_at_night and night else None
    queue_auth = (
        [QueueAuthentication("inference-queue-auth", QueueAuthenticationArgs(
            k8s_provider=compute.provider, namespace=scope.namespace, depends_on=[keda.release]))]
        if backfill is not None else []
    )  # fmt: skip
    policy = ScalingPolicy(
        scope=scope,
        prometheus_url=stack.prometheus_url,
        min_replicas=bounds[0],
        max_replicas=bounds[1],
        signal=auto.signal,
        target_requests_per_replica=target_requests(settings),
        kv_cache_target=auto.kv_cache_target if scope.has_kv_cache_metrics else None,
        queue_ratio_target=auto.queue_ratio_target,
        polling_interval_seconds=auto.polling_interval_seconds,
        behaviour=auto.behaviour(),
        night=night,
        failure_threshold=auto.fallback.failure_threshold,
        blind_replicas=_blind_replicas(settings, bounds),
        backfill=backfill,
    )
    workload = ScaledWorkload(
        name,
        ScaledWorkloadArgs(
            k8s_provider=compute.provider,
            policy=policy,
            target=ScaleTarget(
                name=service.workload_name,
                kind="LeaderWorkerSet" if service.workload_kind == "LeaderWorkerSet" else "Deployment",
            ),
            depends_on=[keda.release, service, stack, *queue_auth],
        ),
    )
    if export:
        pulumi.export(
            "autoscaling",
            {
                "scaledObject": workload.scaled_object_name,
                "hpa": workload.hpa_name,
                "minReplicas": bounds[0],
                "maxReplicas": bounds[1],
            },
        )
    return workload


def _blind_replicas(settings: Settings, bounds: tuple[int, int]) -> int:
    """What the rollout runs while every demand trigger is missing: autoscaling.fallback.replicas, else the planned
    replicas (what a first deploy starts, before any series exists), within the day bounds."""
    wanted = settings.autoscaling.fallback.replicas or planned_replicas(settings)
    return min(max(wanted, bounds[0], 1), bounds[1])


def _thresholds(settings: Settings) -> AlertThresholds:
    alerts = settings.observability.alerts
    startup_minutes = -(-settings.inference.probes.startup_seconds // 60)
    return AlertThresholds(
        ttft_p95_seconds=settings.serving.slo.ttft_p95_ms / 1000,
        itl_seconds=settings.verification.slo.itl_p95_ms / 1000,
        utilisation_floor=alerts.utilisation_floor,
        waste_for=alerts.waste_for,
        kv_cache_ratio=alerts.kv_cache_ratio,
        waiting_per_replica=alerts.waiting_per_replica,
        queue_seconds=alerts.queue_seconds,
        # Longer than a model load: a pod loading its engine is not an incident.
        not_ready_for=f"{startup_minutes + 5}m",
        edge_5xx_ratio=alerts.edge_5xx_ratio,
        edge_429_ratio=alerts.edge_429_ratio,
    )


def _monitors(compute: Compute, edge: Edge | None = None, picker_namespace: str | None = None) -> list[Monitor]:
    out = []
    if picker_namespace is not None:
        # The endpoint picker beside the serving pods: its alerts (blind scorers, failed or slow picks) read its
        # own metrics. The chart's ServiceMonitor is off (catalog/endpoint_picker.py says why).
        out.append(
            Monitor(
                name=service_name(),
                namespace=picker_namespace,
                kind="ServiceMonitor",
                match_labels={"app.kubernetes.io/name": service_name()},
                port=METRICS_PORT_NAME,
            )
        )
    if edge is not None:
        # The gateway's Envoy pods: the edge alerts (5xx, 429, a missing rate-limit service) read their
        # stats. Envoy Gateway v1.9.0 names the port "metrics" (19001) and serves /stats/prometheus
        # (internal/infrastructure/kubernetes/proxy/resource.go, internal/xds/bootstrap/bootstrap.yaml.tpl).
        out.append(
            Monitor(
                name="edge-gateway-envoy",
                namespace=edge.gateway.namespace,
                kind="PodMonitor",
                match_labels={PROXY_LABEL: GATEWAY_NAME},
                port="metrics",
                path="/stats/prometheus",
            )
        )
    if any(pool.vendor == catalog.VENDOR_NEURON for pool in compute.pools.values()):
        out.append(
            Monitor(
                name="neuron-monitor",
                namespace=KUBE_SYSTEM,
                kind="PodMonitor",
                match_labels=NEURON_MONITOR_LABELS,
                port="metrics",
                relabel_node=True,
            )
        )
    installed = {"karpenter": compute.karpenter, "cluster-autoscaler": compute.autoscaler}
    out += [
        Monitor(
            name=release,
            namespace=KUBE_SYSTEM,
            kind="ServiceMonitor",
            match_labels={"app.kubernetes.io/instance": release},
            port=port,
        )
        for release, port in PROVISIONER_METRICS_PORTS.items()
        if installed[release] is not None
    ]
    return out
