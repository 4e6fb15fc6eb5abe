"""The stack's cluster: EKS control plane, add-ons, system nodes, accelerator pools, device software.

Order matters and is explicit: control plane -> node role -> network add-ons (CNI with network policy
enforcement, kube-proxy, pod identity agent) -> system node group -> workload add-ons (CoreDNS, EBS CSI
+ gp3 StorageClass) -> Karpenter, or the cluster autoscaler when pools are managed node groups ->
accelerator pools -> device plugins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components import catalog, eks_versions
from components.accelerator_software import AcceleratorSoftware, AcceleratorSoftwareArgs
from components.cluster import Cluster, ClusterArgs
from components.cluster_addons import (
    VPC_CNI_NETWORK_POLICY,
    AddonIdentity,
    AddonSpec,
    ClusterAddons,
    ClusterAddonsArgs,
)
from components.cluster_autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.iam_documents import CNI_POLICY, EBS_CSI_POLICY, ebs_kms_policy
from components.karpenter import Karpenter, KarpenterArgs
from components.karpenter_node_pool import KarpenterNodePool, KarpenterNodePoolArgs
from components.node_pool import NodePool, NodePoolArgs
from components.node_role import NodeRole, NodeRoleArgs
from components.pool_profile import LABEL_NODE_ROLE, ROLE_SYSTEM, PoolProfile, PoolSpec, profile
from infra.foundation import Foundation
from infra.settings import Settings
from infra.settings.node_pools import NodePoolSettings

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


def build_cluster(settings: Settings, foundation: Foundation) -> Compute:
    cfg, region, partition = settings.cluster, settings.region.name, foundation.partition
    name = foundation.cluster_name
    net, keys = foundation.network, foundation.keys
    versions = eks_versions.addon_versions(cfg.kubernetes_version, cfg.addon_versions)
    cluster = Cluster(
        "cluster",
        ClusterArgs(
            cluster_name=name,
            kubernetes_version=cfg.kubernetes_version,
            subnet_ids=net.intra_subnet_ids or net.private_subnet_ids,
            secrets_key_arn=keys.cluster_key_arn,
            logs_key_arn=keys.logs_key_arn,
            region=region,
            partition=partition,
            log_retention_days=cfg.log_retention_days,
            public_access_cidrs=cfg.public_access_cidrs,
            admin_principal_arns=_admins(settings),
            read_only_principal_arns=settings.access.read_only_role_arns,
            support_type=cfg.support_type,
            # Not data, but an outage if deleted: EKS refuses DeleteCluster and Pulumi refuses to plan it.
            deletion_protection=settings.production,
            protect=settings.production,
        ),
    )
    node_role = NodeRole("nodes", NodeRoleArgs(cluster_name=name, partition=partition))
    network_addons = ClusterAddons(
        "addons-network",
        ClusterAddonsArgs(
            cluster_name=cluster.cluster_name,
            partition=partition,
            addons=[
                AddonSpec(name=eks_versions.ADDON_POD_IDENTITY, version=versions[eks_versions.ADDON_POD_IDENTITY]),
                AddonSpec(
                    name=eks_versions.ADDON_VPC_CNI,
                    version=versions[eks_versions.ADDON_VPC_CNI],
                    identity=AddonIdentity(service_account="aws-node", managed_policies=[CNI_POLICY]),
                    configuration_values=json.dumps(VPC_CNI_NETWORK_POLICY),
                ),
                AddonSpec(name=eks_versions.ADDON_KUBE_PROXY, version=versions[eks_versions.ADDON_KUBE_PROXY]),
            ],
        ),
    )
    node_groups_sgs = [cluster.cluster_security_group_id, foundation.security_groups.node_sg_id]
    zones = list(foundation.zones)
    instance_tags = settings.default_tags
    pools = {
        pool_name: profile(_pool_spec(pool_name, pool), zones) for pool_name, pool in settings.node_pools.root.items()
    }
    managed = cfg.provisioning == "managed"
    # The cluster autoscaler runs for managed pools; then it also sizes the system group, so tag it too.
    autoscaled = name if managed and pools else None
    system = NodePool(
        "pool-system",
        NodePoolArgs(
            cluster_name=cluster.cluster_name,
            name_prefix=name,
            kubernetes_version=cfg.kubernetes_version,
            node_role_arn=node_role.role_arn,
            pool=profile(_system_spec(settings), zones),
            subnet_ids_by_zone=net.private_subnet_ids_by_zone,
            security_group_ids=node_groups_sgs,
            instance_tags=instance_tags,
            autoscaler_cluster_name=autoscaled,
        ),
        opts=pulumi.ResourceOptions(depends_on=[network_addons]),
    )
    workload_addons = ClusterAddons(
        "addons-workload",
        ClusterAddonsArgs(
            cluster_name=cluster.cluster_name,
            partition=partition,
            addons=[
                AddonSpec(name=eks_versions.ADDON_COREDNS, version=versions[eks_versions.ADDON_COREDNS]),
                AddonSpec(
                    name=eks_versions.ADDON_EBS_CSI,
                    version=versions[eks_versions.ADDON_EBS_CSI],
                    identity=AddonIdentity(
                        service_account="ebs-csi-controller-sa",
                        managed_policies=[EBS_CSI_POLICY],
                        inline_policy=keys.storage_key_arn.apply(lambda arn: json.dumps(ebs_kms_policy(arn))),
                    ),
                ),
            ],
            storage_class_key_arn=keys.storage_key_arn,
            provider=cluster.provider,
            depends_on=[system],
        ),
    )

    karpenter, autoscaler = None, None
    if not managed:
        karpenter = Karpenter(
            "karpenter",
            KarpenterArgs(
                cluster_name=name,
                cluster=cluster.cluster_name,
                cluster_endpoint=cluster.endpoint,
                node_role_arn=node_role.role_arn,
                region=region,
                account_id=foundation.account_id,
                partition=partition,
                provider=cluster.provider,
                node_selector={LABEL_NODE_ROLE: ROLE_SYSTEM},
                replicas=min(2, cfg.system_node_group.min_size),
            ),
            opts=pulumi.ResourceOptions(depends_on=[workload_addons]),
        )
        for pool_name, pool in pools.items():
            KarpenterNodePool(
                f"pool-{pool_name}",
                KarpenterNodePoolArgs(
                    pool=pool,
                    cluster_name=name,
                    node_role_name=node_role.role_name,
                    cluster_security_group_id=cluster.cluster_security_group_id,
                    provider=cluster.provider,
                    depends_on=[karpenter.release],
                    instance_tags=instance_tags,
                ),
            )
    else:
        if autoscaled is not None:
            autoscaler = ClusterAutoscaler(
                "cluster-autoscaler",
                ClusterAutoscalerArgs(
                    cluster_name=name,
                    cluster=cluster.cluster_name,
                    kubernetes_version=cfg.kubernetes_version,
                    region=region,
                    account_id=foundation.account_id,
                    partition=partition,
                    provider=cluster.provider,
                    node_selector={LABEL_NODE_ROLE: ROLE_SYSTEM},
                    depends_on=[workload_addons],
                ),
            )
        for pool_name, pool in pools.items():
            NodePool(
                f"pool-{pool_name}",
                NodePoolArgs(
                    cluster_name=cluster.cluster_name,
                    name_prefix=name,
                    kubernetes_version=cfg.kubernetes_version,
                    node_role_arn=node_role.role_arn,
                    pool=pool,
                    subnet_ids_by_zone=net.private_subnet_ids_by_zone,
                    security_group_ids=node_groups_sgs,
                    instance_tags=instance_tags,
                    autoscaler_cluster_name=autoscaled,
                ),
                opts=pulumi.ResourceOptions(depends_on=[network_addons]),
            )
    vendors = {p.vendor for p in pools.values()}
    if pools:
        AcceleratorSoftware(
            "accelerators",
            AcceleratorSoftwareArgs(
                provider=cluster.provider,
                nvidia=catalog.VENDOR_NVIDIA in vendors,
                neuron=catalog.VENDOR_NEURON in vendors,
                efa=any(p.efa for p in pools.values()),
                system_node_selector={LABEL_NODE_ROLE: ROLE_SYSTEM},
            ),
            opts=pulumi.ResourceOptions(depends_on=[workload_addons]),
        )

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


def _pool_spec(name: str, pool: NodePoolSettings) -> PoolSpec:
    return PoolSpec(
        name=name,
        instance_types=tuple(pool.instance_types),
        capacity_types=tuple(pool.capacity_types),
        reservation_ids=tuple(pool.reservation_ids),
        min_size=pool.min_size,
        max_size=pool.max_size,
        desired_size=pool.desired_size,
        disk_size_gib=pool.disk_size_gib,
        zones=tuple(pool.availability_zones or ()),
        efa=pool.efa,
        ami_family=pool.ami_family,
        labels=dict(pool.labels),
        expire_after=pool.expire_after,
        termination_grace_period=pool.termination_grace_period,
        consolidate_after=pool.consolidate_after,
        disruption_budget=pool.disruption_budget,
    )
