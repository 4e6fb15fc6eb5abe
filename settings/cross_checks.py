"""The rules between keys of different sections that ``load_settings`` enforces: the settings' declared
cross-checks.

Each rule is a pair (or a few) of keys that can contradict each other across sections. When they do, the stack
is refused before any resource is registered (``inferctl plan`` exits 2, ``pulumi up`` stops at the settings)
with one problem reported at ``key`` whose message names every key of ``others``, so the reader sees both
sides of the contradiction. The checks themselves live with the section that reports them (its ``problems``
method, or a module it calls: ``module`` says which); this table is what they promise, and
tests/settings/test_contradiction_sweep.py holds each of them to it on every shipped stack: a contradicting
mutation of dev, prod and npu per rule, refused with exit 2 naming both keys. A check that starts reading
another section must add its rule here (the sweep finds every section a check reads, and fails on a read no
rule declares).

Key paths are written as in the stack file; ``<pool>``, ``<client>`` and ``<tier>`` stand for a map's key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PLACEHOLDER = re.compile(r"<[a-z]+>")


@dataclass(frozen=True)
class CrossCheck:
    rule: str
    """A short name (the sweep's test id)."""
    key: str
    """Where the problem is reported: the key a user changes to resolve it, as the stack file writes it."""
    others: tuple[str, ...]
    """The keys of other sections the message names: the other side of the contradiction."""
    module: str
    """The settings module whose check reports it."""
    production_only: bool = False
    """Whether only a production stack is held to it (a development stack may, e.g., reach a Service over HTTP)."""
    why: str = ""

    def key_pattern(self) -> re.Pattern[str]:
        """``key`` as a pattern over reported paths (a placeholder is any map key; an index may follow)."""
        return re.compile(_pattern(self.key) + r"(\[\d+\])?")

    def names(self, other: str, message: str) -> bool:
        """Whether ``message`` names ``other`` (a placeholder matching a concrete map key, or written as is)."""
        return re.search(r"(?<![\w.])" + _pattern(other) + r"(?![\w])", message) is not None


def _pattern(key: str) -> str:
    parts = PLACEHOLDER.split(key)
    return r"(?:[a-z0-9][a-z0-9-]*|<[a-z]+>)".join(re.escape(p) for p in parts)


POOL_MAX = "nodePools.<pool>.maxSize"
SYSTEM_MAX = "cluster.systemNodeGroup.maxSize"
SYSTEM_TYPES = "cluster.systemNodeGroup.instanceTypes"

CROSS_CHECKS: tuple[CrossCheck, ...] = (
    # --- autoscaling against the rollout and its pool
    CrossCheck("scale-down-vs-model-load", "autoscaling.scaleDown.stabilizationSeconds",
               ("inference.probes.startupSeconds",), "autoscaling",
               why="a dip would drop a replica that takes a model load to come back"),
    CrossCheck("ceiling-vs-pool", "autoscaling.maxReplicas", ("serving.nodePool", POOL_MAX), "autoscaling",
               why="replicas beyond what the serving pool holds at its maxSize stay Pending"),
    CrossCheck("floor-vs-pool", "autoscaling.minReplicas", ("serving.nodePool", POOL_MAX), "autoscaling",
               why="a floor the serving pool cannot hold keeps replicas Pending for ever"),
    CrossCheck("replicas-vs-pool", "inference.replicas", ("serving.nodePool", POOL_MAX), "inference",
               why="without autoscaling, replicas beyond what the pool holds stay Pending"),
    # --- the cold start's options against the serving pool, the weights' source and the autoscaler
    CrossCheck("image-pull-vs-ami", "coldStart.imagePull", ("nodePools.<pool>.amiFamily",), "cold_start",
               why="parallel is nodeadm's FastImagePull, which only AL2023 nodes run; cached is mounted by AL2023's "
                   "cloud-init before nodeadm starts containerd"),
    CrossCheck("image-cache-vs-provisioning", "coldStart.imagePull", ("cluster.provisioning",), "cold_start",
               why="the cache volume and its mount are written into the managed node groups' launch templates"),
    CrossCheck("image-cache-credits-vs-scale-up", "coldStart.imageCache.sizeGib", ("autoscaling.scaleUp.pods",),
               "cold_start", why="one zone creates min(10, 1024 / size) fast-restored volumes at once; a scale-up "
               "asking for more new nodes gets some volumes restored lazily"),
    CrossCheck("image-pull-vs-instance", "coldStart.imagePull", ("nodePools.<pool>.instanceTypes",), "cold_start",
               why="nodeadm ignores FastImagePull below 4 vCPUs or 7 GiB"),
    CrossCheck("download-concurrency-vs-source", "coldStart.downloadConcurrency",
               ("inference.model.source", "fsx.enabled"), "cold_start",
               why="weights from FSx are staged by copy: ranged GETs have no effect there"),
    CrossCheck("weights-rate-vs-fsx", "coldStart.figures.weightsMiBps",
               ("fsx.storageCapacityGiB", "fsx.perUnitStorageThroughput"), "cold_start",
               why="no pod stages faster than the file system's network throughput"),
    CrossCheck("weights-rate-vs-card", "coldStart.figures.weightsMiBps", ("nodePools.<pool>.instanceTypes",),
               "cold_start", why="no download is faster than the card it arrives on"),
    CrossCheck("standby-single-node", "coldStart.standbyReplicas", ("serving.nodes",), "cold_start",
               why="a standby pod holds one node's accelerators, a multi-node replica a group of nodes"),
    CrossCheck("standby-needs-autoscaling", "coldStart.standbyReplicas", ("autoscaling.enabled",), "cold_start",
               why="standby serves scale-ups, which only the autoscaler makes"),
    CrossCheck("standby-vs-pool", "coldStart.standbyReplicas", ("autoscaling.maxReplicas", POOL_MAX), "cold_start",
               why="the replicas at the ceiling and the standby pods must fit the serving pool at its maxSize"),
    # --- the observability stack KEDA reads
    CrossCheck("autoscaling-needs-prometheus", "observability.enabled", ("autoscaling.enabled",), "observability",
               why="KEDA scales on this Prometheus' queries"),
    # --- the batch lane
    CrossCheck("batch-workers-off-accelerators", "batch.workers.nodePool", ("nodePools.<pool>",), "batch",
               why="the lane's workers run on the system nodes, never an accelerator pool"),
    CrossCheck("batch-vcpu-vs-system", "batch.workers.maxReplicas", (SYSTEM_MAX,), "batch",
               why="the lane at its ceiling must fit the system node group at its largest"),
    CrossCheck("batch-worker-memory-vs-node", "batch.workers.memoryGib", (SYSTEM_TYPES,), "batch",
               why="a pod larger than a system node stays Pending"),
    CrossCheck("batch-api-memory-vs-node", "batch.api.memoryGib", (SYSTEM_TYPES,), "batch",
               why="a pod larger than a system node stays Pending"),
    CrossCheck("batch-memory-vs-system", "batch.api.memoryGib", (SYSTEM_MAX,), "batch",
               why="the lane's memory at its ceiling must fit the system node group at its largest"),
    CrossCheck("batch-quota-client", "batch.quotas.clients.<client>", ("edge.auth.clients",), "batch",
               why="a quota for a client the edge does not know is never applied"),
    CrossCheck("batch-needs-edge", "batch.enabled", ("edge.domain",), "batch", production_only=True,
               why="production serves the Batch API only through the authenticated edge"),
    CrossCheck("batch-needs-edge-auth", "batch.enabled", ("edge.auth.enabled",), "batch",
               why="the Batch API keeps each client's files by the client id the edge's key check sets: "
                   "behind an edge that checks no key every call is 401"),
    CrossCheck("batch-needs-keda", "batch.enabled", ("autoscaling.enabled",), "batch",
               why="KEDA, installed with autoscaling, scales the workers on the queue"),
    CrossCheck("batch-needs-prometheus", "batch.enabled", ("observability.enabled",), "batch",
               why="the workers back off on the servers' signals from this Prometheus"),
    # --- capacity against what the server takes and the pool holds
    CrossCheck("capacity-isl", "capacity.isl", ("serving.maxInputLen",), "capacity"),
    CrossCheck("capacity-osl", "capacity.osl", ("serving.maxSeqLen",), "capacity"),
    CrossCheck("capacity-peak-vs-pool", POOL_MAX, ("capacity.tokensPerDay",), "capacity",
               why="the planned peak needs more nodes than the serving pool may have"),
    # --- cluster and pools
    CrossCheck("neuron-monitor-digest", "cluster.neuronMonitorDigest", ("nodePools.<pool>.instanceTypes",),
               "cluster", production_only=True, why="production runs neuron-monitor by digest on Neuron pools"),
    CrossCheck("karpenter-min-size", "nodePools.<pool>.minSize", ("cluster.provisioning",), "node_pools",
               why="a Karpenter NodePool has no minimum"),
    CrossCheck("karpenter-desired-size", "nodePools.<pool>.desiredSize", ("cluster.provisioning",), "node_pools",
               why="a Karpenter NodePool has no desired count"),
    CrossCheck("pool-zones", "nodePools.<pool>.availabilityZones", ("network.availabilityZones",), "node_pools",
               why="a pool's zones are among the cluster's"),
    CrossCheck("spot-role", "keys.createSpotServiceRole", ("nodePools.<pool>.capacityTypes",), "keys",
               why="the role is for spot pools only"),
    # --- network
    CrossCheck("endpoints-for-provisioning", "network.interfaceEndpointServices", ("cluster.provisioning",),
               "network", why="without NAT each AWS API the cluster calls needs its interface endpoint"),
    CrossCheck("endpoints-for-fsx", "network.interfaceEndpointServices", ("fsx.enabled",), "network",
               why="without NAT the CSI driver reaches FSx through its endpoint only"),
    CrossCheck("endpoints-for-batch", "network.interfaceEndpointServices", ("batch.enabled",), "network",
               why="without NAT the lane and KEDA reach SQS through its endpoint only"),
    # --- storage
    CrossCheck("fsx-zone", "fsx.availabilityZone", ("network.availabilityZones",), "fsx"),
    CrossCheck("model-source-needs-fsx", "inference.model.source", ("fsx.enabled",), "inference"),
    CrossCheck("fsx-unread", "inference.model.source", ("fsx.enabled",), "inference",
               why="a Lustre cache the rollout never reads is paid for nothing"),
    CrossCheck("artifact-uri-vs-version", "serving.artifacts.engineUri", ("inference.model.engine",), "inference",
               why="the rollout passes the stack bucket's version"),
    CrossCheck("grace-vs-exit", "inference.termination.gracePeriodSeconds",
               ("serving.server.exitTimeoutSeconds",), "inference",
               why="the pod is killed before the server has drained"),
    CrossCheck("node-grace-vs-pod-grace", "nodePools.<pool>.terminationGracePeriod",
               ("inference.termination.gracePeriodSeconds", "cluster.provisioning"), "inference",
               why="Karpenter grants a draining pod only what is left of its node's grace period"),
    # --- serving against the edge and the pools
    CrossCheck("explicit-control-behind-edge", "serving.server.modelControlMode", ("edge.domain",), "serving",
               why="one client's key could unload the model for all"),
    CrossCheck("key-header-stripped", "serving.auth.enabled", ("edge.auth.header",), "serving",
               why="the gateway strips the header Triton would check"),
    CrossCheck("serving-pool-exists", "serving.nodePool", ("nodePools",), "serving"),
    CrossCheck("backend-vs-accelerator", "serving.backend", ("nodePools.<pool>.instanceTypes",), "serving",
               why="the backend needs its vendor's accelerator"),
    # --- verification and load test against the server, the edge and the system nodes
    CrossCheck("verification-isl", "verification.isl", ("serving.maxInputLen",), "verification"),
    CrossCheck("verification-osl", "verification.osl", ("serving.maxSeqLen",), "verification"),
    CrossCheck("verification-target", "verification.url", ("edge.domain",), "load_test", production_only=True,
               why="without an edge the only target is the in-cluster Service over plain HTTP"),
    CrossCheck("verification-client", "verification.client", ("edge.auth.clients",), "load_test"),
    CrossCheck("verification-tier-rate", "verification.client", ("edge.rateLimits.tiers.<tier>.requestsPerMinute",),
               "verification", why="the Job would be answered 429"),
    CrossCheck("verification-tier-streams", "verification.concurrencyPerReplica",
               ("edge.rateLimits.tiers.<tier>.concurrentStreams",), "verification",
               why="the Job would be answered 429"),
    CrossCheck("verification-waf-ip", "verification.maxRequests", ("edge.waf.ipRateLimit",), "verification",
               why="the WAF would block the Job (403)"),
    CrossCheck("verification-waf-key", "verification.maxRequests", ("edge.waf.apiKeyRateLimit",), "verification",
               why="the WAF would block the Job (403)"),
    CrossCheck("load-test-pool", "loadTest.nodePool", ("nodePools.<pool>",), "load_test",
               why="load-test workers never run on accelerator nodes"),
    CrossCheck("load-test-target", "loadTest.url", ("edge.domain",), "load_test"),
    CrossCheck("load-test-client", "loadTest.client", ("edge.auth.clients",), "load_test"),
    CrossCheck("load-test-workers-vs-system", "loadTest.workers", (SYSTEM_MAX,), "load_test"),
    CrossCheck("load-test-tier-rate", "loadTest.targetRate", ("edge.rateLimits.tiers.<tier>.requestsPerMinute",),
               "load_test", why="the edge would answer 429"),
    CrossCheck("load-test-waf-ip", "loadTest.targetRate", ("edge.waf.ipRateLimit",), "load_test",
               why="the WAF would block the load (403)"),
    # --- physical names two sections plan
    CrossCheck("batch-repository-name", "batch.image.repository", ("inference.image.repository",), "__init__",
               why="two settings planning one ECR repository"),
    CrossCheck("verification-repository-name", "verification.image.repository", ("inference.image.repository",),
               "__init__", why="two settings planning one ECR repository"),
)  # fmt: skip
