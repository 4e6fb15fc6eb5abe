"""Node rules: IMDSv2 and encrypted volumes on every launch template (and Karpenter EC2NodeClass),
instance types within the stack's allow-list, accelerators within the stack's budget.

The budget sums every node group and NodePool: an EFA pool is one per zone, each sized per zone, so
its zones x maxSize nodes are counted without knowing about pools at all.

Karpenter objects are judged by what Karpenter does with absent fields: an EC2NodeClass without
metadataOptions gets ``httpTokens: required``, and its default block devices are encrypted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from components import catalog
from policies.props import as_list, get

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ACCELERATOR_RESOURCES = (catalog.RESOURCE_NVIDIA_GPU, catalog.RESOURCE_NEURON_DEVICE)
DEFAULT_MAX_HOP_LIMIT = 2


def _truthy(value: Any) -> bool:
    """Launch templates carry booleans as strings ("true") in pulumi-aws."""
    return value is True or str(value).lower() == "true"


def _imdsv2(args: ResourceValidationArgs, report: ReportViolation) -> None:
    max_hops = int(args.get_config().get("maxHopLimit", DEFAULT_MAX_HOP_LIMIT))
    if args.resource_type in (LAUNCH_TEMPLATE, INSTANCE):
        tokens, hops = (
            get(args.props, "metadataOptions.httpTokens", "optional"),
            get(args.props, "metadataOptions.httpPutResponseHopLimit", 1),
        )
        endpoint = get(args.props, "metadataOptions.httpEndpoint", "enabled")
    elif args.resource_type == NODE_CLASS:
        tokens = get(args.props, "spec.metadataOptions.httpTokens", "required")
        hops = get(args.props, "spec.metadataOptions.httpPutResponseHopLimit", 1)
        endpoint = get(args.props, "spec.metadataOptions.httpEndpoint", "enabled")
    else:
        return
    if endpoint == "disabled":
        return
    if tokens != "required":
        report(f"IMDSv1 allowed (httpTokens={tokens!r}); require IMDSv2 tokens")
    if int(hops) > max_hops:
        report(f"IMDS hop limit {int(hops)} lets containers reach node credentials; at most {max_hops}")


def _block_devices(props: Any, resource_type: str) -> Iterator[tuple[str, Any]]:
    if resource_type == LAUNCH_TEMPLATE:
        for bdm in as_list(get(props, "blockDeviceMappings")):
            if get(bdm, "ebs") is not None:
                yield str(get(bdm, "deviceName", "?")), get(bdm, "ebs.encrypted")
    elif resource_type == NODE_CLASS:
        for bdm in as_list(get(props, "spec.blockDeviceMappings")):
            if get(bdm, "ebs") is not None:
                yield str(get(bdm, "deviceName", "?")), get(bdm, "ebs.encrypted", False)


def _ebs_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (LAUNCH_TEMPLATE, NODE_CLASS):
        return
    for device, encrypted in _block_devices(args.props, args.resource_type):
        if not _truthy(encrypted):
            report(f"EBS volume {device} is not encrypted")


def instance_types(resource_type: str, props: Any) -> list[str] | None:
    """The instance types a node resource may launch; None when it does not say (Karpenter pools
    without an ``In`` requirement on the instance type can launch anything)."""
    if resource_type == NODE_GROUP:
        return [str(t) for t in as_list(get(props, "instanceTypes"))]
    if resource_type in (LAUNCH_TEMPLATE, INSTANCE):
        found = get(props, "instanceType")
        return [str(found)] if found else []
    if resource_type == NODE_POOL:
        for req in as_list(get(props, "spec.template.spec.requirements")):
            if get(req, "key") == INSTANCE_TYPE_LABEL and get(req, "operator") == "In":
                return [str(v) for v in as_list(get(req, "values"))]
        return None
    return []


def _allow_list(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in (NODE_GROUP, LAUNCH_TEMPLATE, INSTANCE, NODE_POOL):
        return
    allowed = set(args.get_config().get("allowedInstanceTypes") or catalog.known_instance_types())
    types = instance_types(args.resource_type, args.props)
    if types is None:
        report(f"does not restrict {INSTANCE_TYPE_LABEL} with operator In; the allow-list cannot hold")
        return
    outside = sorted(set(types) - allowed)
    if outside:
        report(f"instance types {', '.join(outside)} are not in this stack's allow-list")


def accelerators(resource_type: str, props: Any) -> tuple[int | None, str]:
    """Accelerators a pool can hold at its maximum and how that was counted (None: unbounded)."""
    if resource_type == NODE_GROUP:
        per_node = 0
        for name in as_list(get(props, "instanceTypes")):
            try:
                per_node = max(per_node, catalog.instance(str(name)).accelerator_count)
            except catalog.CatalogError:
                return None, f"instance type {name} is not in the catalog"
        max_size = int(get(props, "scalingConfig.maxSize", 0))
        return per_node * max_size, f"{max_size} nodes x {per_node}"
    if resource_type == NODE_POOL:
        limits = get(props, "spec.limits") or {}
        counted = [int(float(limits[r])) for r in ACCELERATOR_RESOURCES if r in limits]
        types = instance_types(resource_type, props) or []
        accelerated = any(t in catalog.CATALOG and catalog.CATALOG[t].is_accelerated for t in types)
        if not counted:
            return (None, "no accelerator limit") if accelerated or not types else (0, "no accelerators")
        return sum(counted), "spec.limits"
    return 0, ""


def _budget(args: StackValidationArgs, report: ReportViolation) -> None:
    budget = int(args.get_config().get("maxAccelerators", 0))
    total, parts = 0, []
    for resource in args.resources:
        if resource.resource_type not in (NODE_GROUP, NODE_POOL):
            continue
        count, how = accelerators(resource.resource_type, resource.props)
        if count is None:
            report(f"{resource.name}: accelerators unbounded ({how}); the budget cannot hold", resource.urn)
            continue
        if count:
            total += count
            parts.append(f"{resource.name} {count} ({how})")
    if total > budget:
        report(f"pools can hold {total} accelerators ({'; '.join(parts)}), over this stack's budget of {budget}")


POLICIES = [
    ResourceValidationPolicy(
        name="nodes-imdsv2",
        description="Launch templates and EC2NodeClasses require IMDSv2 with a small hop limit.",
        validate=_imdsv2,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"maxHopLimit": {"type": "integer", "default": DEFAULT_MAX_HOP_LIMIT}}
        ),
    ),
    ResourceValidationPolicy(
        name="nodes-ebs-encrypted",
        description="Every EBS volume of launch templates and EC2NodeClasses is encrypted.",
        validate=_ebs_encrypted,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="node-instance-types-allowed",
        description="Node groups, launch templates and Karpenter NodePools use only the stack's allowed types.",
        validate=_allow_list,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"allowedInstanceTypes": {"type": "array", "items": {"type": "string"}, "default": []}}
        ),
    ),
    StackValidationPolicy(
        name="accelerator-budget",
        description="Max nodes x accelerators per node, summed over every node group and NodePool (an EFA pool "
        "has one per zone), stays within the stack's budget.",
        validate=_budget,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"maxAccelerators": {"type": "integer", "default": 0}}),
    ),
]
