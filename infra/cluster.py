"""The stack's cluster: EKS control plane, add-ons, system nodes, accelerator pools, device software.

Order matters and is explicit: control plane -> node role -> network add-ons (CNI with network policy
enforcement, kube-proxy, pod identity agent) -> system node group -> workload add-ons (CoreDNS, EBS CSI
+ gp3 StorageClass) -> Karpenter, or the cluster autoscaler when pools are managed node groups ->
accelerator pools -> device plugins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform import catalog
from inference_platform.catalog import eks_versions
from inference_platform.catalog.image_cache import ImageCacheSpec
from inference_platform.catalog.pool_profile import (
    LABEL_NODE_ROLE,
    ROLE_SYSTEM,
    PoolProfile,
    PoolSpec,
    profile,
)
from inference_platform.components.cluster.addons import (
    VPC_CNI_NETWORK_POLICY,
    AddonIdentity,
    AddonSpec,
    ClusterAddons,
    ClusterAddonsArgs,
)
from inference_platform.components.cluster.eks_cluster import Cluster, ClusterArgs
from inference_platform.components.compute.accelerator_software import AcceleratorSoftware, AcceleratorSoftwareArgs
from inference_platform.components.compute.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from inference_platform.components.compute.karpenter import Karpenter, KarpenterArgs
from inference_platform.components.compute.karpenter_node_pool import KarpenterNodePool, KarpenterNodePoolArgs
from inference_platform.components.compute.node_pool import NodePool, NodePoolArgs
from inference_platform.components.identity.iam_documents import CNI_POLICY, EBS_CSI_POLICY, ebs_kms_policy
from inference_platform.components.identity.node_role import NodeRole, NodeRoleArgs
from inference_platform.infra.foundation import Foundation
from inference_platform.infra.image_cache import image_cache_preflight
from inference_platform.planners import cold_start
from inference_platform.settings import Settings
from inference_platform.settings.node_pools import NodePoolSettings

SYSTEM_POOL = "system"


@dataclass(frozen=True)
class Compute:
    """What later areas use: the cluster (name, provider) and where and how workloads can run."""

    cluster: Cluster
    cluster_name: pulumi.Output[str]
    provider: k8s.Provider
    node_role: NodeRole
    pools: dict[str, PoolProfile]
    """Accelerator pools by name: labels, taint, resource name, zones, EFA (what pods must match)."""
    node_security_group_id: pulumi.Output[str]
    storage_class_name: str | None
    karpenter: Karpenter | None
    autoscaler: ClusterAutoscaler | None
    """The cluster autoscaler of the managed node groups (None with Karpenter or without pools)."""
    system_nodes: NodePool
    """The system node group: every release whose pods select the system nodes is ordered after it (on a
    fresh cluster Helm would otherwise wait its 300 s for pods that cannot be scheduled)."""


def build_cluster(settings: Settings, foundation: Foundation) -> Compute:
    image_cache_preflight(settings)
    cluster = _control_plane(settings, foundation)
    node_role = NodeRole("nodes", NodeRoleArgs(cluster_name=foundation.cluster_name, partition=foundation.partition))
    network_addons = _network_addons(settings, foundation, cluster)
    pools = {
        pool_name: profile(
            _pool_spec(
                pool_name,
                pool,
                fast_image_pull=_fast_image_pull(settings, pool_name),
                image_cache=_image_cache(settings, pool_name),
            ),
            list(foundation.zones),
        )
        for pool_name, pool in settings.node_pools.root.items()
    }
    managed = settings.cluster.provisioning == "managed"
    # The cluster autoscaler runs for managed pools; then it also sizes the system group, so tag it too.
    autoscaled = foundation.cluster_name if managed and pools else None
    nodes = _NodeGroups(settings, foundation, cluster, node_role, autoscaled)
    system = nodes.add("pool-system", profile(_system_spec(settings), list(foundation.zones)), network_addons)
    workload_addons = _workload_addons(settings, foundation, cluster, system)
    karpenter, autoscaler = None, None
    if managed:
        autoscaler = _cluster_autoscaler(settings, foundation, cluster, workload_addons) if autoscaled else None
        for pool_name, pool in pools.items():
            nodes.add(f"pool-{pool_name}", pool, network_addons)
    else:
        karpenter = _karpenter(settings, foundation, cluster, workload_addons, pools)
    if pools:
        _device_software(settings, cluster, pools, workload_addons)
    _export(cluster, pools)
    return Compute(
        cluster=cluster,
        cluster_name=cluster.cluster_name,
        provider=cluster.provider,
        node_role=node_role,
        pools=pools,
        node_security_group_id=foundation.security_groups.node_sg_id,
        storage_class_name=workload_addons.storage_class_name,
        karpenter=karpenter,
        autoscaler=autoscaler,
        system_nodes=system,
    )


def _control_plane(settings: Settings, foundation: Foundation) -> Cluster:
    cfg, net, keys = settings.cluster, foundation.network, foundation.keys
    return Cluster(
        "cluster",
        ClusterArgs(
            cluster_name=foundation.cluster_name,
            kubernetes_version=cfg.kubernetes_version,
            subnet_ids=net.intra_subnet_ids or net.private_subnet_ids,
            secrets_key_arn=keys.cluster_key_arn,
            logs_key_arn=keys.logs_key_arn,
            region=settings.region.name,
            partition=foundation.partition,
            log_retention_days=cfg.log_retention_days,
            public_access_cidrs=cfg.public_access_cidrs,
            private_access_cidrs=cfg.private_access.cidrs,
            private_access_security_group_ids=cfg.private_access.security_group_ids,
            admin_principal_arns=_admins(settings),
            read_only_principal_arns=settings.access.read_only_role_arns,
            support_type=cfg.support_type,
            # Not data, but an outage if deleted: EKS refuses DeleteCluster and Pulumi refuses to plan it.
            deletion_protection=settings.production,
            protect=settings.production,
        ),
    )


def _addon(name: str, versions: dict[str, str], **kwargs: Any) -> AddonSpec:
    return AddonSpec(name=name, version=versions[name], **kwargs)


def _network_addons(settings: Settings, foundation: Foundation, cluster: Cluster) -> ClusterAddons:
    """What nodes need before they can join: pod identity, the CNI (enforcing NetworkPolicies), kube-proxy."""
    versions = eks_versions.addon_versions(settings.cluster.kubernetes_version, settings.cluster.addon_versions)
    cni = AddonIdentity(service_account="aws-node", managed_policies=[CNI_POLICY])
    return ClusterAddons(
        "addons-network",
        ClusterAddonsArgs(
            cluster_name=cluster.cluster_name,
            partition=foundation.partition,
            addons=[
                _addon(eks_versions.ADDON_POD_IDENTITY, versions),
                _addon(
                    eks_versions.ADDON_VPC_CNI,
                    versions,
                    identity=cni,
                    configuration_values=json.dumps(VPC_CNI_NETWORK_POLICY),
                ),
                _addon(eks_versions.ADDON_KUBE_PROXY, versions),
            ],
        ),
    )


def _workload_addons(settings: Settings, foundation: Foundation, cluster: Cluster, system: NodePool) -> ClusterAddons:
    """What needs running nodes: CoreDNS, and the EBS CSI driver with a CMK-encrypted gp3 StorageClass."""
    versions = eks_versions.addon_versions(settings.cluster.kubernetes_version, settings.cluster.addon_versions)
    storage_key_arn = foundation.keys.storage_key_arn
    ebs = AddonIdentity(
        service_account="ebs-csi-controller-sa",
        managed_policies=[EBS_CSI_POLICY],
        inline_policy=storage_key_arn.apply(lambda arn: json.dumps(ebs_kms_policy(arn))),
    )
    return ClusterAddons(
        "addons-workload",
        ClusterAddonsArgs(
            cluster_name=cluster.cluster_name,
            partition=foundation.partition,
            addons=[
                _addon(eks_versions.ADDON_COREDNS, versions),
                _addon(eks_versions.ADDON_EBS_CSI, versions, identity=ebs),
            ],
            storage_class_key_arn=storage_key_arn,
            provider=cluster.provider,
            depends_on=[system],
        ),
    )


@dataclass(frozen=True)
class _NodeGroups:
    """Managed node groups share everything but their pool: subnets, security groups, role and tags."""

    settings: Settings
    foundation: Foundation
    cluster: Cluster
    node_role: NodeRole
    autoscaled: str | None

    def add(self, name: str, pool: PoolProfile, after: pulumi.Resource) -> NodePool:
        return NodePool(
            name,
            NodePoolArgs(
                cluster_name=self.cluster.cluster_name,
                name_prefix=self.foundation.cluster_name,
                kubernetes_version=self.settings.cluster.kubernetes_version,
                node_role_arn=self.node_role.role_arn,
                pool=pool,
                subnet_ids_by_zone=self.foundation.network.private_subnet_ids_by_zone,
                security_group_ids=[self.cluster.cluster_security_group_id, self.foundation.security_groups.node_sg_id],
                instance_tags=self.settings.default_tags,
                volume_kms_key_arn=self.foundation.keys.storage_key_arn,
                autoscaler_cluster_name=self.autoscaled,
            ),
            opts=pulumi.ResourceOptions(depends_on=[after]),
        )


def _cluster_autoscaler(
    settings: Settings, foundation: Foundation, cluster: Cluster, after: pulumi.Resource
) -> ClusterAutoscaler:
    return ClusterAutoscaler(
        "cluster-autoscaler",
        ClusterAutoscalerArgs(
            cluster_name=foundation.cluster_name,
            cluster=cluster.cluster_name,
            kubernetes_version=settings.cluster.kubernetes_version,
            region=settings.region.name,
            account_id=foundation.account_id,
            partition=foundation.partition,
            provider=cluster.provider,
            node_selector={LABEL_NODE_ROLE: ROLE_SYSTEM},
            depends_on=[after],
        ),
    )


def _karpenter(
    settings: Settings,
    foundation: Foundation,
    cluster: Cluster,
    after: pulumi.Resource,
    pools: dict[str, PoolProfile],
) -> Karpenter:
    # Karpenter's nodes get a role of their own: EKS creates the EC2_LINUX access entry of the system
    # node group's role itself, and a second entry for that role fails with 409 ResourceInUseException.
    node_role = NodeRole(
        "karpenter-nodes",
        NodeRoleArgs(cluster_name=foundation.cluster_name, partition=foundation.partition, purpose="Karpenter nodes"),
    )
    karpenter = Karpenter(
        "karpenter",
        KarpenterArgs(
            cluster_name=foundation.cluster_name,
            cluster=cluster.cluster_name,
            cluster_endpoint=cluster.endpoint,
            node_role_arn=node_role.role_arn,
            region=settings.region.name,
            account_id=foundation.account_id,
            partition=foundation.partition,
            provider=cluster.provider,
            node_selector={LABEL_NODE_ROLE: ROLE_SYSTEM},
            replicas=min(2, settings.cluster.system_node_group.min_size),
            volume_kms_key_arn=foundation.keys.storage_key_arn,
        ),
        opts=pulumi.ResourceOptions(depends_on=[after]),
    )
    for pool_name, pool in pools.items():
        KarpenterNodePool(
            f"pool-{pool_name}",
            KarpenterNodePoolArgs(
                pool=pool,
                cluster_name=foundation.cluster_name,
                node_role_name=node_role.role_name,
                cluster_security_group_id=cluster.cluster_security_group_id,
                provider=cluster.provider,
                depends_on=[karpenter.release],
                instance_tags=settings.default_tags,
                volume_kms_key_arn=foundation.keys.storage_key_arn,
            ),
        )
    return karpenter


def _device_software(
    settings: Settings, cluster: Cluster, pools: dict[str, PoolProfile], after: pulumi.Resource
) -> AcceleratorSoftware:
    vendors = {p.vendor for p in pools.values()}
    return AcceleratorSoftware(
        "accelerators",
        AcceleratorSoftwareArgs(
            provider=cluster.provider,
            nvidia=catalog.VENDOR_NVIDIA in vendors,
            neuron=catalog.VENDOR_NEURON in vendors,
            efa=any(p.efa for p in pools.values()),
            system_node_selector={LABEL_NODE_ROLE: ROLE_SYSTEM},
            neuron_monitor_digest=settings.cluster.neuron_monitor_digest,
            metrics_namespace=settings.inference.monitoring.namespace,
            dcgm_service_monitor=settings.observability.enabled,
        ),
        opts=pulumi.ResourceOptions(depends_on=[after]),
    )


def _export(cluster: Cluster, pools: dict[str, PoolProfile]) -> None:
    pulumi.export("clusterName", cluster.cluster_name)
    pulumi.export("clusterEndpoint", cluster.endpoint)
    pulumi.export("kubeconfig", cluster.kubeconfig)
    pulumi.export(
        "nodePools",
        {
            n: {"labels": p.labels, "zones": list(p.zones), "efa": p.efa, "shards": [s.name for s in p.shards]}
            for n, p in pools.items()
        },
    )


def _admins(settings: Settings) -> list[str]:
    """Admin roles from settings, plus the identity running the update when ``creatorAdmin`` is on."""
    admins = list(settings.access.admin_role_arns)
    if settings.cluster.creator_admin:
        caller = aws.get_caller_identity().arn
        # An assumed-role session ARN names a session; access entries take the role it came from.
        creator = aws.iam.get_session_context(arn=caller).issuer_arn
        if creator not in admins and creator not in settings.access.read_only_role_arns:
            admins.append(creator)
    return admins


def _system_spec(settings: Settings) -> PoolSpec:
    group = settings.cluster.system_node_group
    return PoolSpec(
        name=SYSTEM_POOL,
        role=ROLE_SYSTEM,
        instance_types=tuple(group.instance_types),
        min_size=group.min_size,
        max_size=group.max_size,
        desired_size=group.desired_size,
        disk_size_gib=group.disk_size_gib,
    )


def _fast_image_pull(settings: Settings, pool_name: str) -> bool:
    """coldStart.imagePull parallel turns nodeadm's FastImagePull on for the serving pool's nodes."""
    return settings.cold_start.image_pull == "parallel" and pool_name == settings.serving.node_pool


def _image_cache(settings: Settings, pool_name: str) -> ImageCacheSpec | None:
    """coldStart.imagePull cached gives the serving pool's nodes the cache volume (catalog/image_cache.py)."""
    cache = settings.cold_start.image_cache
    if settings.cold_start.image_pull != "cached" or cache is None or pool_name != settings.serving.node_pool:
        return None
    return ImageCacheSpec(snapshot_id=cache.snapshot_id, size_gib=cache.size_gib,
                          fast_snapshot_restore=cache.fast_snapshot_restore,
                          initialization_rate_mib_s=cache.initialization_rate_mi_bps)  # fmt: skip


def _pool_spec(
    name: str, pool: NodePoolSettings, *, fast_image_pull: bool = False, image_cache: ImageCacheSpec | None = None
) -> PoolSpec:
    return PoolSpec(
        name=name,
        instance_types=tuple(pool.instance_types),
        capacity_types=tuple(pool.capacity_types),
        reservation_ids=tuple(pool.reservation_ids),
        min_size=pool.min_size,
        max_size=pool.max_size,
        desired_size=pool.desired_size,
        disk_size_gib=pool.disk_size_gib,
        disk_throughput_mib_s=_gp3_throughput(pool),
        disk_iops=_gp3_iops(pool),
        local_nvme_raid0=pool.local_nvme_raid0(),
        fast_image_pull=fast_image_pull,
        image_cache=image_cache,
        zones=tuple(pool.availability_zones or ()),
        efa=pool.efa,
        ami_family=pool.ami_family,
        labels=dict(pool.labels),
        expire_after=pool.expire_after,
        termination_grace_period=pool.termination_grace_period,
        consolidate_after=pool.consolidate_after,
        disruption_budget=pool.disruption_budget,
    )


def _gp3_throughput(pool: NodePoolSettings) -> int | None:
    """The pool's gp3 MiB/s when above EBS's free 125 (None leaves the volume as AWS defaults it)."""
    mib_s = pool.disk_throughput()
    return mib_s if mib_s > cold_start.GP3_BASE_MIB_S else None


def _gp3_iops(pool: NodePoolSettings) -> int | None:
    """IOPS the throughput needs (0.25 MiB/s per IOPS), when above the free 3,000."""
    mib_s = _gp3_throughput(pool)
    if mib_s is None:
        return None
    iops = cold_start.gp3_iops_for(mib_s)
    return iops if iops > cold_start.GP3_BASE_IOPS else None
