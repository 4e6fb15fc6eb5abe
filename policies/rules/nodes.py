"""Node rules: IMDSv2 and encrypted volumes on every launch template (and Karpenter EC2NodeClass),
instance types within the stack's allow-list and offered in their node groups' zones, accelerators within
the stack's budget.

The budget sums every way a stack can create accelerator capacity: EKS node groups, Karpenter NodePools
(their ``spec.limits``), Auto Scaling groups (maxSize x the accelerators of their instance types, from
mixed-instances overrides or their launch template), EC2 instances, EC2 Fleets and Spot Fleets. A launch
template of an accelerated type that no group of the stack uses is reported too: what launches from it
cannot be counted. An EFA pool is one node group per zone, each sized per zone, so its zones x maxSize
nodes are counted without knowing about pools at all.

Karpenter objects are judged by what Karpenter does with absent fields: an EC2NodeClass without
metadataOptions gets ``httpTokens: required``, and its default block devices are encrypted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    StackValidationArgs,
)

from inference_platform import catalog
from inference_platform.catalog import offerings
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.props import as_list, get

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
AUTOSCALING_GROUP = "aws:autoscaling/group:Group"
LAUNCH_CONFIGURATION = "aws:ec2/launchConfiguration:LaunchConfiguration"
FLEET = "aws:ec2/fleet:Fleet"
SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
# Every resource that creates instances: the budget counts them all, not only node groups.
CAPACITY_TYPES = (
    "aws:eks/nodeGroup:NodeGroup",
    NODE_POOL,
    AUTOSCALING_GROUP,
    "aws:ec2/instance:Instance",
    FLEET,
    SPOT_FLEET,
)
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
            # A volume from a snapshot takes the snapshot's encryption (EC2 refuses a value beside it): judged by
            # node-snapshot-volumes and the stack's preview (policies/rules/image_cache.py).
            if get(bdm, "ebs") is not None and not get(bdm, "ebs.snapshotId"):
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


def _per_node(types: list[str]) -> tuple[int | None, str]:
    """Most accelerators any of the types carries; None (with the reason) for a type the catalog lacks."""
    per_node = 0
    for name in types:
        try:
            per_node = max(per_node, catalog.instance(str(name)).accelerator_count)
        except catalog.CatalogError:
            return None, f"instance type {name} is not in the catalog"
    return per_node, ""


def accelerators(resource_type: str, props: Any, template_types: list[str] | None = None) -> tuple[int | None, str]:
    """Accelerators a resource can hold at its maximum and how that was counted (None: unbounded).

    ``template_types`` are the instance types of the launch template the resource launches from, for
    node groups and Auto Scaling groups that name none themselves."""
    if resource_type == NODE_GROUP:
        types = [str(t) for t in as_list(get(props, "instanceTypes"))] or list(template_types or [])
        per_node, why = _per_node(types)
        if per_node is None:
            return None, why
        max_size = int(get(props, "scalingConfig.maxSize", 0))
        return per_node * max_size, f"{max_size} nodes x {per_node}"
    if resource_type == AUTOSCALING_GROUP:
        overrides = as_list(get(props, "mixedInstancesPolicy.launchTemplate.overrides"))
        types = [str(get(o, "instanceType")) for o in overrides if get(o, "instanceType")] or list(template_types or [])
        if not types:
            return None, "launches from a template this stack does not define (instance type unknown)"
        per_node, why = _per_node(types)
        if per_node is None:
            return None, why
        max_size = int(float(get(props, "maxSize", 0)))
        return per_node * max_size, f"{max_size} instances x {per_node}"
    if resource_type == INSTANCE:
        per_node, why = _per_node([str(get(props, "instanceType", ""))] if get(props, "instanceType") else [])
        return (None, why) if per_node is None else (per_node, "1 instance")
    if resource_type == FLEET:
        overrides = [o for c in as_list(get(props, "launchTemplateConfigs")) for o in as_list(get(c, "overrides"))]
        types = [str(get(o, "instanceType")) for o in overrides if get(o, "instanceType")] or list(template_types or [])
        per_node, why = _per_node(types)
        if per_node is None or not types:
            return None, why or "instance type unknown"
        capacity = int(float(get(props, "targetCapacitySpecification.totalTargetCapacity", 0)))
        return per_node * capacity, f"{capacity} instances x {per_node}"
    if resource_type == SPOT_FLEET:
        types = [
            str(get(s, "instanceType")) for s in as_list(get(props, "launchSpecifications")) if get(s, "instanceType")
        ]
        per_node, why = _per_node(types or list(template_types or []))
        if per_node is None or not (types or template_types):
            return None, why or "instance type unknown"
        capacity = int(float(get(props, "targetCapacity", 0)))
        return per_node * capacity, f"{capacity} instances x {per_node}"
    if resource_type == NODE_POOL:
        limits = get(props, "spec.limits") or {}
        counted = [int(float(limits[r])) for r in ACCELERATOR_RESOURCES if r in limits]
        types = instance_types(resource_type, props) or []
        accelerated = any(t in catalog.CATALOG and catalog.CATALOG[t].is_accelerated for t in types)
        if not counted:
            return (None, "no accelerator limit") if accelerated or not types else (0, "no accelerators")
        return sum(counted), "spec.limits"
    return 0, ""


def _templates_of(resource: PolicyResource) -> list[PolicyResource]:
    """The launch templates (or launch configurations) a group or fleet launches from, by property dependency."""
    found = []
    for deps in resource.property_dependencies.values():
        found += [d for d in deps if d.resource_type in (LAUNCH_TEMPLATE, LAUNCH_CONFIGURATION)]
    return found


def _budget(args: StackValidationArgs, report: ReportViolation) -> None:
    # No default in the schema: an absent budget is a missing configuration, which the message must say.
    configured = args.get_config().get("maxAccelerators")
    budget = int(configured or 0)
    total, parts = 0, []
    used_templates: set[str] = set()
    for resource in args.resources:
        if resource.resource_type not in CAPACITY_TYPES:
            continue
        templates = _templates_of(resource)
        used_templates.update(t.urn for t in templates)
        template_types = [str(get(t.props, "instanceType")) for t in templates if get(t.props, "instanceType")]
        count, how = accelerators(resource.resource_type, resource.props, template_types)
        if count is None:
            report(f"{resource.name}: accelerators unbounded ({how}); the budget cannot hold", resource.urn)
            continue
        if count:
            total += count
            parts.append(f"{resource.name} {count} ({how})")
    for resource in args.resources:
        if resource.resource_type in (LAUNCH_TEMPLATE, LAUNCH_CONFIGURATION) and resource.urn not in used_templates:
            kind = get(resource.props, "instanceType")
            if kind in catalog.CATALOG and catalog.CATALOG[kind].is_accelerated:
                report(
                    f"{resource.name}: launch template for {kind} outside any group of this stack; whatever launches "
                    "from it escapes the accelerator budget",
                    resource.urn,
                )
    if total > budget and configured is None:
        report(
            f"pools can hold {total} accelerators ({'; '.join(parts)}), and no policy configuration sets "
            "accelerator-budget.maxAccelerators, so none are allowed: configure the pack (inferctl plan "
            "--policy-config FILE or the project's policies/config/<stack>.json; pulumi preview --policy-pack-config)"
        )
    elif total > budget:
        report(f"pools can hold {total} accelerators ({'; '.join(parts)}), over this stack's budget of {budget}")


def _is_accelerated(types: list[str]) -> bool:
    return any(t in catalog.CATALOG and catalog.CATALOG[t].is_accelerated for t in types)


def on_demand(resource_type: str, props: Any, templates: list[PolicyResource]) -> bool:
    """Whether the resource may launch on-demand instances (every market default is on-demand)."""
    template_spot = any(get(t.props, "instanceMarketOptions.marketType") == "spot" for t in templates)
    if resource_type == AUTOSCALING_GROUP:
        distribution = get(props, "mixedInstancesPolicy.instancesDistribution") or {}
        if get(props, "mixedInstancesPolicy") is not None:
            base = float(get(distribution, "onDemandBaseCapacity", 0))
            above = float(get(distribution, "onDemandPercentageAboveBaseCapacity", 100))
            return base > 0 or above > 0
        return not template_spot
    if resource_type == INSTANCE:
        return get(props, "instanceMarketOptions.marketType") != "spot" and not template_spot
    if resource_type == FLEET:
        spec = get(props, "targetCapacitySpecification") or {}
        return get(spec, "defaultTargetCapacityType") != "spot" or float(get(spec, "onDemandTargetCapacity", 0)) > 0
    if resource_type == SPOT_FLEET:
        return float(get(props, "onDemandTargetCapacity", 0)) > 0
    return False


def _spot_only(args: StackValidationArgs, report: ReportViolation) -> None:
    if args.get_config().get("allowOnDemand", True):
        return
    for resource in args.resources:
        if resource.resource_type not in (AUTOSCALING_GROUP, INSTANCE, FLEET, SPOT_FLEET):
            continue
        templates = _templates_of(resource)
        types = [str(get(t.props, "instanceType")) for t in templates if get(t.props, "instanceType")]
        types += [str(get(resource.props, "instanceType"))] if get(resource.props, "instanceType") else []
        overrides = [
            *as_list(get(resource.props, "mixedInstancesPolicy.launchTemplate.overrides")),
            *[o for c in as_list(get(resource.props, "launchTemplateConfigs")) for o in as_list(get(c, "overrides"))],
            *as_list(get(resource.props, "launchSpecifications")),
        ]
        types += [str(get(o, "instanceType")) for o in overrides if get(o, "instanceType")]
        if _is_accelerated(types) and on_demand(resource.resource_type, resource.props, templates):
            report(
                f"{resource.name}: may launch on-demand accelerator instances ({', '.join(sorted(set(types)))}) where "
                "this stack allows spot only",
                resource.urn,
            )


SUBNET = "aws:ec2/subnet:Subnet"
_ZONE_NAME = re.compile(r"^([a-z]{2}(?:-[a-z]+)+-\d+)[a-z]$")


def _offered_in_zones(args: StackValidationArgs, report: ReportViolation) -> None:
    """Each node group's instance types are offered in the zones of its subnets (AWS's offerings as moto
    ships them, inference_platform.catalog.offerings). By zone name where names are the same place in every account;
    where they are mapped per account, only what holds in every account (enough zones offer the type)."""
    subnets = {r.urn: r for r in args.resources if r.resource_type == SUBNET}
    by_id = {get(r.props, "id"): r for r in subnets.values() if get(r.props, "id")}
    for group in args.resources:
        if group.resource_type != NODE_GROUP:
            continue
        types = [t for t in as_list(get(group.props, "instanceTypes")) if isinstance(t, str)]
        found = [subnets[d.urn] for d in group.property_dependencies.get("subnetIds", []) if d.urn in subnets]
        found += [by_id[i] for i in as_list(get(group.props, "subnetIds")) if isinstance(i, str) and i in by_id]
        zones = sorted({z for z in (get(r.props, "availabilityZone") for r in found) if isinstance(z, str)})
        regions = {m.group(1) for m in (_ZONE_NAME.match(z) for z in zones) if m}
        if not types or len(regions) != 1:
            continue
        region = regions.pop()
        for gap in offerings.unoffered(types, region, zones):
            report(f"{group.name}: {gap.describe(region)}", group.urn)


POLICIES = [
    StackValidationPolicy(
        name="node-group-types-offered-in-zones",
        description="Every node group's instance types are offered in the zones of its subnets (AWS's "
        "per-zone offerings, vendored in catalog/instance_offerings.json).",
        validate=_offered_in_zones,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="nodes-imdsv2",
        description="Launch templates and EC2NodeClasses require IMDSv2 with a small hop limit.",
        validate=_imdsv2,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "maxHopLimit": {"type": "integer", "default": DEFAULT_MAX_HOP_LIMIT, "minimum": 1, "maximum": 64}
            }
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
        description="Max nodes x accelerators per node, summed over every node group, NodePool, Auto Scaling "
        "group, EC2 instance and fleet (an EFA pool has one node group per zone), stays within the stack's budget.",
        validate=_budget,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"maxAccelerators": {"type": "integer", "minimum": 0}}),
    ),
    StackValidationPolicy(
        name="accelerators-spot-only",
        description="Where the stack allows no on-demand accelerators (development), Auto Scaling groups, EC2 "
        "instances and fleets of accelerated types launch spot only (node groups and Karpenter NodePools: "
        "cost-dev-on-demand-accelerators).",
        validate=_spot_only,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "allowOnDemand": {
                    "type": "boolean",
                    "default": True,
                    "description": "false: accelerated capacity must be spot (development stacks)",
                }
            }
        ),
    ),
]
