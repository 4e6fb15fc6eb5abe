"""One Triton + TensorRT-LLM (or Neuron) inference rollout: the workload and everything around it.

- The stack's validated serving section as a ConfigMap (``/etc/inference/serving.json``), named by
  its content hash so that a settings change rolls the pods.
- A Deployment when a replica fits one node; a LeaderWorkerSet (mpirun across the group) when it
  spans ``nodes`` > 1 (components/serving/mpi_launch.py), with the leader's launch Role.
- A Service (openai 9000, http 8000, grpc 8001, metrics 8002), a PodDisruptionBudget, a NetworkPolicy
  admitting only the load-balancer subnets (the OpenAI server) and the monitoring namespace (metrics), and a
  ServiceMonitor.
Rolling updates add a pod before removing one (``maxUnavailable`` 0 by default) and wait as long as
a model load takes; the pod shape comes from components/serving/pod.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog.server_metrics import RELAYED_ENGINE_FAMILIES
from inference_platform.catalog.serving_contract import (
    METRICS_PATH,
    METRICS_PORT,
    OPENAI_METRICS_PATH,
    OPENAI_PORT,
    SERVER_COMPONENT,
)
from inference_platform.components.common.errors import raise_if
from inference_platform.components.serving import mpi_launch
from inference_platform.components.serving.pod import (
    PORTS,
    SETTINGS_FILE,
    Drain,
    ModelSource,
    Placement,
    Probes,
    Resources,
    SecretMount,
    ServerPod,
    placeholder_spec,
    pod_spec,
    server_args,
    server_container,
)
from inference_platform.components.serving.serving_config import ServingConfig, settings_file

MONITORING_API_VERSION = "monitoring.coreos.com/v1"
DEFAULT_APP_NAME = "triton"
IMAGE_PULL_SECONDS = 600
"""Time a node may take to pull the image (~20 GB) before a pod's startup budget even begins."""
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


@dataclass(frozen=True, kw_only=True)
class Exposure:
    """Who may reach a rollout: load-balancer CIDRs for HTTP and gRPC, the monitoring namespace for metrics."""

    load_balancer_cidrs: Sequence[str] = ()
    """Default none. Source CIDRs admitted to HTTP and gRPC (the load balancers' subnets)."""
    monitoring_namespace: str = "monitoring"
    """Default ``monitoring``. The namespace admitted to the metrics port."""
    service_monitor: bool = True
    """Default ``True``. Create a ServiceMonitor (its CRD must exist: pass the release in depends_on)."""
    scrape_interval: str = "15s"
    """Default ``15s``."""


@dataclass(frozen=True, kw_only=True)
class InferenceServiceArgs:
    """What a rollout needs: the cluster's provider, namespace, image, serving configuration, model source, placement
    and resources."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    namespace: str
    """Required. The inference namespace (created with its service account by the storage area)."""
    service_account: str
    """Required. Bound to the read-only model role through Pod Identity."""
    image: pulumi.Input[str]
    """Required. Image reference, by digest in production (``<repo>@sha256:...``)."""
    image_version: str
    """Required. Tag (or short digest) for the ``app.kubernetes.io/version`` label."""
    serving_config: ServingConfig
    """Required. The validated serving settings (``ServingSettings`` of infra.settings.serving, or a
    ``ServingDocument``), written to the pods' settings file (components/serving/serving_config.py)."""
    model: ModelSource
    """Required. Where engine and tokenizer come from (inference_platform.components.serving.pod.ModelSource)."""
    placement: Placement
    """Required. Pool, taints, accelerators and EFA per pod, spread."""
    resources: Resources
    """Required. Server container CPU and memory (requests = limits)."""
    region: str
    """Required. AWS region of the bucket and secrets."""
    init_resources: Resources = field(default_factory=lambda: Resources(cpu=1, memory_gib=2))
    """Default 1 CPU / 2 GiB per artifact init container."""
    shared_memory_gib: float = 2
    """Default 2. /dev/shm size; below resources.memory_gib."""
    scratch_gib: int = 10
    """Default 10. Writable /tmp."""
    replicas: int = 1
    """Default 1. Replicas (multi-node: groups)."""
    autoscaled_max: int | None = None
    """Default none. When an autoscaler (KEDA) owns the replica count: its ceiling. Pulumi then sets
    ``replicas`` only at creation and leaves later counts alone, and multi-node launch rights cover the
    ceiling's groups."""
    nodes: int = 1
    """Default 1: a Deployment. More: a LeaderWorkerSet of this group size."""
    max_surge: int = 1
    """Default 1. Extra pods (groups) during an update."""
    max_unavailable: int = 0
    """Default 0. Pods (groups) below ``replicas`` during an update; not 0 with max_surge 0."""
    pdb_max_unavailable: int = 1
    """Default 1 (>= 1). Pods a voluntary disruption may evict at once."""
    probes: Probes = field(default_factory=Probes)
    """Default: a 30-minute startup budget, 10 s period (inference_platform.components.serving.pod.Probes)."""
    drain: Drain = field(default_factory=Drain)
    """Default: 15 s preStop, 60 s grace period (inference_platform.components.serving.pod.Drain)."""
    secrets: SecretMount | None = None
    """Default none. The API-key files through the secrets CSI driver."""
    neuron: bool = False
    """Default ``False``. The Neuron image (its compile cache goes under /tmp)."""
    run_as_user: int = 1000
    """Default 1000: the image's unprivileged user."""
    exposure: Exposure = field(default_factory=Exposure)
    """Default: no load-balancer CIDRs, metrics open to ``monitoring``, a ServiceMonitor."""
    app_name: str = DEFAULT_APP_NAME
    """Default ``triton``. Kubernetes name of the workload, Service and friends."""
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. What custom resources need first (the LeaderWorkerSet and Prometheus CRD releases)."""
    namespace_resources: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """Default none. The namespace and service account (inference_platform.components.workload_namespace): every object of
    the rollout waits for them, so ordering is explicit rather than left to API retries."""


class InferenceService(pulumi.ComponentResource):
    """One Triton inference rollout: its serving ConfigMap, workload, Service, PDB, NetworkPolicy and ServiceMonitor."""

    workload_kind: str
    workload_name: str
    service_name: str
    config_map_name: str
    placeholder_pod_spec: dict[str, Any]

    def __init__(self, name: str, args: InferenceServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:serving:InferenceService", name, None, opts)
        child = pulumi.ResourceOptions(
            parent=self, provider=args.k8s_provider, depends_on=list(args.namespace_resources)
        )
        after_crds = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=list(args.depends_on)))
        app, ns = args.app_name, args.namespace
        selector = {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": name}
        labels = {
            **selector,
            "app.kubernetes.io/part-of": "inference-platform",
            "app.kubernetes.io/version": args.image_version,
        }

        serving_file = settings_file(args.serving_config)
        digest = hashlib.sha256(serving_file.encode()).hexdigest()[:10]
        self.config_map_name = f"{app}-serving-{digest}"
        k8s.core.v1.ConfigMap(
            f"{name}-config",
            metadata={"name": self.config_map_name, "namespace": ns, "labels": labels},
            data={SETTINGS_FILE: serving_file},
            immutable=True,
            opts=child,
        )
        pod = ServerPod(
            image=args.image,
            settings_config_map=self.config_map_name,
            model=args.model,
            placement=args.placement,
            resources=args.resources,
            init_resources=args.init_resources,
            shared_memory_gib=args.shared_memory_gib,
            scratch_gib=args.scratch_gib,
            region=args.region,
            selector=selector,
            probes=args.probes,
            drain=args.drain,
            secrets=args.secrets,
            neuron=args.neuron,
            run_as_user=args.run_as_user,
        )
        # A pod that holds what one serving pod holds, doing nothing (components/autoscaling/standby.py).
        self.placeholder_pod_spec = placeholder_spec(pod)
        if args.nodes == 1:
            service_selector = self._deployment(name, args, pod, labels, child)
        else:
            service_selector = self._leader_worker_set(name, args, pod, labels, child, after_crds)
        self.workload_name = app

        self.service_name = app
        k8s.core.v1.Service(
            f"{name}-service",
            metadata={"name": app, "namespace": ns, "labels": labels},
            spec={"type": "ClusterIP", "selector": service_selector, "ports": service_ports()},
            opts=child,
        )
        k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb",
            metadata={"name": app, "namespace": ns, "labels": labels},
            spec={
                "maxUnavailable": args.pdb_max_unavailable,
                "selector": {"matchLabels": selector},
                # A pod that never became ready (a failing model load) must not block node drains.
                "unhealthyPodEvictionPolicy": "AlwaysAllow",
            },
            opts=child,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata={"name": app, "namespace": ns, "labels": labels},
            spec=network_policy_spec(selector, args.exposure, group_traffic=args.nodes > 1),
            opts=child,
        )
        if args.exposure.service_monitor:
            k8s.apiextensions.CustomResource(
                f"{name}-service-monitor",
                api_version=MONITORING_API_VERSION,
                kind="ServiceMonitor",
                metadata={"name": app, "namespace": ns, "labels": labels},
                spec=service_monitor_spec(selector, ns, args.exposure.scrape_interval),
                opts=after_crds,
            )
        self.register_outputs(
            {
                "workload_kind": self.workload_kind,
                "workload_name": self.workload_name,
                "service_name": self.service_name,
                "config_map_name": self.config_map_name,
            }
        )

    def _deployment(
        self,
        name: str,
        args: InferenceServiceArgs,
        pod: ServerPod,
        labels: Mapping[str, str],
        opts: pulumi.ResourceOptions,
    ) -> dict[str, str]:
        self.workload_kind = "Deployment"
        container = server_container(pod, args=server_args(pod))
        template_labels = {**labels, "app.kubernetes.io/component": SERVER_COMPONENT}
        k8s.apps.v1.Deployment(
            f"{name}-deployment",
            metadata={
                "name": args.app_name,
                "namespace": args.namespace,
                "labels": labels,
                # Pulumi waits for the rollout; model loads take far longer than its 10-minute default.
                "annotations": {"pulumi.com/timeoutSeconds": str(rollout_timeout_seconds(args))},
            },
            spec={
                "replicas": args.replicas,
                "selector": {"matchLabels": dict(pod.selector)},
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": args.max_surge, "maxUnavailable": args.max_unavailable},
                },
                "progressDeadlineSeconds": pod.probes.startup_seconds + IMAGE_PULL_SECONDS,
                "revisionHistoryLimit": 5,
                "template": {
                    "metadata": {"labels": template_labels},
                    "spec": pod_spec(
                        pod, [container], service_account=args.service_account, spread_label_keys=["pod-template-hash"]
                    ),
                },
            },
            opts=_autoscaled(args, opts),
        )
        return dict(pod.selector)

    def _leader_worker_set(
        self,
        name: str,
        args: InferenceServiceArgs,
        pod: ServerPod,
        labels: Mapping[str, str],
        opts: pulumi.ResourceOptions,
        after_crds: pulumi.ResourceOptions,
    ) -> dict[str, str]:
        self.workload_kind = mpi_launch.LWS_KIND
        app, ns = args.app_name, args.namespace
        launcher = f"{app}-mpi-launcher"
        k8s.core.v1.ConfigMap(
            f"{name}-launcher",
            metadata={"name": launcher, "namespace": ns, "labels": labels},
            data={mpi_launch.LAUNCHER_FILE: mpi_launch.LAUNCHER_SCRIPT},
            opts=opts,
        )
        groups = max(args.replicas, args.autoscaled_max or 0) + args.max_surge
        workers = mpi_launch.worker_pod_names(app, groups, args.nodes)
        role = k8s.rbac.v1.Role(
            f"{name}-launcher-role",
            metadata={"name": launcher, "namespace": ns, "labels": labels},
            rules=mpi_launch.launcher_rules(workers),
            opts=opts,
        )
        k8s.rbac.v1.RoleBinding(
            f"{name}-launcher-binding",
            metadata={"name": launcher, "namespace": ns, "labels": labels},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": launcher},
            subjects=[{"kind": "ServiceAccount", "name": args.service_account, "namespace": ns}],
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[role])),
        )
        leader_labels = {**labels, "app.kubernetes.io/component": SERVER_COMPONENT}
        worker_labels = {**labels, "app.kubernetes.io/component": "inference-worker"}
        leader_pod = dataclasses.replace(
            pod, selector={**pod.selector, "app.kubernetes.io/component": SERVER_COMPONENT}
        )
        wait = pod.probes.startup_seconds + IMAGE_PULL_SECONDS
        spec = mpi_launch.leader_worker_set_spec(
            replicas=args.replicas,
            nodes=args.nodes,
            max_surge=args.max_surge,
            max_unavailable=args.max_unavailable,
            leader_labels=leader_labels,
            worker_labels=worker_labels,
            leader=mpi_launch.leader_spec(
                leader_pod,
                service_account=args.service_account,
                nodes=args.nodes,
                launcher_config_map=launcher,
                wait_seconds=wait,
            ),
            worker=mpi_launch.worker_spec(pod, service_account=args.service_account, selector=pod.selector),
        )
        k8s.apiextensions.CustomResource(
            f"{name}-group",
            api_version=mpi_launch.LWS_API_VERSION,
            kind=mpi_launch.LWS_KIND,
            metadata={"name": app, "namespace": ns, "labels": labels},
            spec=spec,
            opts=_autoscaled(args, after_crds),
        )
        return {**pod.selector, mpi_launch.LABEL_WORKER_INDEX: "0"}


def _autoscaled(args: InferenceServiceArgs, opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """The autoscaler owns spec.replicas once it exists: an update must not reset it to the first count."""
    if args.autoscaled_max is None:
        return opts
    return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(ignore_changes=["spec.replicas"]))


def service_ports() -> list[dict[str, Any]]:
    protocols = {"openai": "http", "http": "http", "grpc": "kubernetes.io/h2c", "metrics": "http"}
    return [
        {"name": name, "port": port, "targetPort": name, "protocol": "TCP", "appProtocol": protocols[name]}
        for name, port in PORTS
    ]


def network_policy_spec(selector: Mapping[str, str], exposure: Exposure, *, group_traffic: bool) -> dict[str, Any]:
    """Ingress only from the load balancers' subnets (the OpenAI server) and monitoring (metrics). Triton's
    KServe v2 HTTP/gRPC ports stay pod-internal: the OpenAI server reaches them on loopback. Kubelet probes come
    from the node, which NetworkPolicy always admits."""
    rules: list[dict[str, Any]] = []
    if exposure.load_balancer_cidrs:
        rules.append(
            {
                "from": [{"ipBlock": {"cidr": cidr}} for cidr in exposure.load_balancer_cidrs],
                "ports": [{"port": OPENAI_PORT, "protocol": "TCP"}],
            }
        )
    rules.append(
        {
            "from": [
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": exposure.monitoring_namespace}}}
            ],
            # Triton's metrics port, and the OpenAI server's /metrics (the request histograms and token counters
            # the rules, dashboards and KEDA read).
            "ports": [{"port": METRICS_PORT, "protocol": "TCP"}, {"port": OPENAI_PORT, "protocol": "TCP"}],
        }
    )
    if group_traffic:
        # MPI daemons and NCCL pick their ports at run time: the group's pods talk on any port.
        rules.append({"from": [{"podSelector": {"matchLabels": dict(selector)}}]})
    return {"podSelector": {"matchLabels": dict(selector)}, "policyTypes": ["Ingress"], "ingress": rules}


RELAYED_FAMILIES = "|".join(re.escape(family) for family in RELAYED_ENGINE_FAMILIES)
"""The engine gauges the OpenAI server relays from Triton (inference_image/openai_api/metrics.py): dropped from its
port, or every request gauge would count twice (autoscaling sums them)."""


def service_monitor_spec(selector: Mapping[str, str], namespace: str, interval: str) -> dict[str, Any]:
    return {
        "selector": {"matchLabels": dict(selector)},
        "namespaceSelector": {"matchNames": [namespace]},
        "endpoints": [
            {"port": "metrics", "path": METRICS_PATH, "interval": interval, "scrapeTimeout": "10s"},
            # The OpenAI server's own series (vLLM's names: TTFT, inter-token, queue time, tokens by client). It relays
            # the engine's nv_trt_llm_* gauges for llm-d's picker, which scrapes the serving port; Prometheus has them
            # from the metrics port already, and a second copy would double every sum KEDA and the alerts take.
            {
                "port": "openai",
                "path": OPENAI_METRICS_PATH,
                "interval": interval,
                "scrapeTimeout": "10s",
                "metricRelabelings": [{"sourceLabels": ["__name__"], "regex": RELAYED_FAMILIES, "action": "drop"}],
            },
        ],
    }


def rollout_timeout_seconds(args: InferenceServiceArgs) -> int:
    """Pods start in batches of max(surge, unavailable); each may pull the image and load the model."""
    batch = max(1, args.max_surge or args.max_unavailable)
    rounds = max(1, math.ceil(args.replicas / batch))
    return rounds * (args.probes.startup_seconds + IMAGE_PULL_SECONDS)


def _validate(args: InferenceServiceArgs) -> None:
    problems = []
    for label, value in (("namespace", args.namespace), ("service_account", args.service_account),
                         ("app_name", args.app_name)):  # fmt: skip
        if not _DNS_LABEL.match(value):
            problems.append(f"{label}={value!r} is not a DNS label")
    if not _LABEL_VALUE.match(args.image_version):
        problems.append(f"image_version={args.image_version!r} is not a label value")
    if args.autoscaled_max is not None and args.autoscaled_max < max(args.replicas, 1):
        problems.append(f"autoscaled_max={args.autoscaled_max} must be >= replicas={args.replicas} and >= 1")
    if args.replicas < 0 or args.nodes < 1:
        problems.append(f"replicas={args.replicas} must be >= 0 and nodes={args.nodes} >= 1")
    if args.max_surge < 0 or args.max_unavailable < 0 or args.max_surge == args.max_unavailable == 0:
        problems.append(f"max_surge={args.max_surge}, max_unavailable={args.max_unavailable}: one must be > 0")
    if args.pdb_max_unavailable < 1:
        problems.append(f"pdb_max_unavailable={args.pdb_max_unavailable} must be >= 1 or drains never finish")
    if args.shared_memory_gib >= args.resources.memory_gib:
        problems.append(
            f"shared_memory_gib={args.shared_memory_gib} counts against resources.memory_gib={args.resources.memory_gib}"
        )
    if args.placement.accelerators < 1:
        problems.append(f"placement.accelerators={args.placement.accelerators} must be >= 1")
    if args.model.kind == "fsx" and not (
        args.model.claim_name and args.model.engine_path and args.model.tokenizer_path
    ):
        problems.append("model: fsx needs claim_name, engine_path and tokenizer_path")
    if args.nodes > 1 and args.neuron:
        problems.append("nodes > 1: the Neuron image serves from one node")
    if args.drain.grace_period_seconds <= args.drain.pre_stop_seconds:
        problems.append(
            f"drain.grace_period_seconds={args.drain.grace_period_seconds} must exceed "
            f"pre_stop_seconds={args.drain.pre_stop_seconds}"
        )
    raise_if("InferenceService", problems)
