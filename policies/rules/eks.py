"""EKS control-plane rules: no world-open API endpoint, secrets envelope-encrypted, every log type on;
an API endpoint the stack's own Kubernetes objects can reach; one access entry per principal; the core
add-ons (coredns, kube-proxy, vpc-cni) for a cluster that does not let EKS bootstrap them.

Unset properties are read with EKS's own defaults (the engine shows only what the program set): the
public endpoint is ON unless ``endpointPublicAccess`` is false, and open to 0.0.0.0/0 unless
``publicAccessCidrs`` says otherwise. CIDRs that together reach more public addresses than a /8 count as
0.0.0.0/0 (``inference_platform.planners.cidr.internet_wide``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    StackValidationArgs,
)

from inference_platform.planners.cidr import internet_wide
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.props import as_list, get

CLUSTER = "aws:eks/cluster:Cluster"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"
# Without these a cluster created with bootstrapSelfManagedAddons false has no pod network, no Service
# routing and no cluster DNS: nodes never get Ready, or every lookup fails.
CORE_ADDONS = ("vpc-cni", "kube-proxy", "coredns")
ROLE = "aws:iam/role:Role"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
API_PORT = 443
WORLD = frozenset({"0.0.0.0/0", "::/0"})
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")


def _public_endpoint(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CLUSTER:
        return
    if get(args.props, "vpcConfig.endpointPublicAccess", True) is False:
        return
    cidrs = set(as_list(get(args.props, "vpcConfig.publicAccessCidrs"))) or {"0.0.0.0/0"}
    wide = sorted(cidrs & WORLD) or internet_wide(cidrs)
    if wide:
        report(
            f"the public API endpoint is open to {wide[0]} ({', '.join(sorted(cidrs))}); turn it off or list the "
            "CIDRs that need it"
        )


def _secrets_encryption(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CLUSTER:
        return
    config = get(args.props, "encryptionConfig") or {}
    if "secrets" not in as_list(get(config, "resources")) or not get(config, "provider.keyArn"):
        report("Kubernetes secrets are not envelope-encrypted; set encryption_config with a KMS key for 'secrets'")


def _logging(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CLUSTER:
        return
    required = args.get_config().get("requiredLogTypes", list(LOG_TYPES))
    enabled = set(as_list(get(args.props, "enabledClusterLogTypes")))
    missing = [t for t in required if t not in enabled]
    if missing:
        report(f"control-plane log types off: {', '.join(missing)}")


def _private_only(cluster: PolicyResource) -> bool:
    return get(cluster.props, "vpcConfig.endpointPublicAccess", True) is False


def _admits_api(rule: PolicyResource) -> bool:
    """An ingress rule that lets some source reach TCP 443 (all traffic included)."""
    props = rule.props
    if rule.resource_type == SG_RULE and get(props, "type") != "ingress":
        return False
    protocol = str(get(props, "ipProtocol", get(props, "protocol", ""))).lower()
    if protocol in ("-1", "all"):
        return True
    low, high = get(props, "fromPort"), get(props, "toPort")
    return (
        protocol in ("tcp", "6")
        and isinstance(low, (int, float))
        and isinstance(high, (int, float))
        and (low <= API_PORT <= high)
    )


def _api_reachable(args: StackValidationArgs, report: ReportViolation) -> None:
    """A private-only endpoint that nothing may reach cannot take the stack's own Kubernetes objects: the
    first `pulumi up` from outside the new VPC creates the cluster, then hangs on the first object."""
    kubernetes = [r for r in args.resources if r.resource_type.startswith("kubernetes:")]
    if not kubernetes:
        return
    # Security groups are related through property dependencies: ids are unknown in a preview.
    admitted: set[str] = set()
    for rule in args.resources:
        if rule.resource_type in (INGRESS_RULE, SG_RULE) and _admits_api(rule):
            admitted.update(dep.urn for dep in rule.property_dependencies.get("securityGroupId", []))
    for cluster in args.resources:
        if cluster.resource_type != CLUSTER or not _private_only(cluster):
            continue
        extra_groups = {dep.urn for dep in cluster.property_dependencies.get("vpcConfig", [])}
        # Rules on the cluster security group depend on the cluster (its id is one of its outputs).
        if admitted & ({cluster.urn} | extra_groups):
            continue
        report(
            f"{cluster.name}: the API endpoint is private and no ingress rule admits anyone to it on {API_PORT}, "
            f"yet the stack installs {len(kubernetes)} Kubernetes resources through it; admit the deployer's "
            "network to the cluster security group (settings: cluster.privateAccess) or open the public endpoint "
            "to named CIDRs (cluster.publicAccessCidrs)",
            cluster.urn,
        )


def _core_addons(args: StackValidationArgs, report: ReportViolation) -> None:
    """An EKS cluster that skips EKS's self-managed add-ons (``bootstrapSelfManagedAddons: false``, as
    inference_platform.components.cluster.Cluster creates it) has managed coredns, kube-proxy and vpc-cni add-ons in the stack."""
    addons = [r for r in args.resources if r.resource_type == ADDON]
    for cluster in args.resources:
        if cluster.resource_type != CLUSTER or get(cluster.props, "bootstrapSelfManagedAddons", True) is not False:
            continue
        name = get(cluster.props, "name")
        present = {
            get(addon.props, "addonName")
            for addon in addons
            if cluster.urn in {dep.urn for dep in addon.property_dependencies.get("clusterName", [])}
            or (name and get(addon.props, "clusterName") == name)
        }
        missing = [a for a in CORE_ADDONS if a not in present]
        if missing:
            report(
                f"{cluster.name}: bootstrapSelfManagedAddons is false and the stack installs no {', '.join(missing)} "
                "add-on for it: nodes get no pod network, Services no routing, pods no DNS; add them "
                "(inference_platform.components.cluster.ClusterAddons) or let EKS bootstrap its own",
                cluster.urn,
            )


def _principals(resource: PolicyResource, prop: str) -> Iterable[str]:
    """What identifies the principal: the ARN when known, and the IAM roles it was derived from (in a
    preview the ARN of a role created in the same update is unknown, its URN is not)."""
    arn = get(resource.props, prop)
    if isinstance(arn, str) and arn:
        yield arn
    for dep in resource.property_dependencies.get(prop, []):
        if dep.resource_type == ROLE:
            yield dep.urn


def _one_entry_per_principal(args: StackValidationArgs, report: ReportViolation) -> None:
    """EKS creates an EC2_LINUX access entry for each managed node group's role itself, and refuses a
    second entry for a principal with 409 ResourceInUseException (nothing orders the two, and destroying
    ours would cut the group's nodes off the cluster)."""
    holders: dict[tuple[str, str], list[tuple[PolicyResource, str]]] = defaultdict(list)
    for resource in args.resources:
        if resource.resource_type == ACCESS_ENTRY:
            found = [(p, "access entry") for p in _principals(resource, "principalArn")]
        elif resource.resource_type == NODE_GROUP:
            found = [
                (p, "EKS's implicit entry for the managed node group") for p in _principals(resource, "nodeRoleArn")
            ]
        else:
            continue
        cluster = _cluster_key(resource)
        seen = set()
        for principal, kind in found:
            if principal not in seen:
                seen.add(principal)
                holders[(cluster, principal)].append((resource, kind))
    reported: set[tuple[str, ...]] = set()
    for (_, principal), owners in holders.items():
        entries = [r for r, kind in owners if kind == "access entry"]
        groups = [r for r, kind in owners if kind != "access entry"]
        # Many node groups may share a role (EKS keeps one entry for it); a second explicit entry may not.
        if not entries or (len(entries) == 1 and not groups):
            continue
        key = tuple(sorted(r.urn for r in entries))
        if key in reported:
            continue
        reported.add(key)
        why = (
            f"the role of managed node group(s) {', '.join(sorted(g.name for g in groups))}, for which EKS creates "
            "its own entry"
            if groups
            else "one principal"
        )
        report(
            f"{', '.join(sorted(e.name for e in entries))}: access entries for {why} ({principal}); a second entry "
            "for a principal fails with 409 ResourceInUseException: give each its own IAM role",
            entries[0].urn,
        )


def _cluster_key(resource: PolicyResource) -> str:
    """The cluster an entry or node group belongs to: its name when known, else the cluster resource."""
    deps = [d.urn for d in resource.property_dependencies.get("clusterName", [])]
    name = get(resource.props, "clusterName")
    return name if isinstance(name, str) and name else ",".join(sorted(deps))


POLICIES = [
    ResourceValidationPolicy(
        name="eks-endpoint-not-public",
        description="The EKS API endpoint is private, or public only for named CIDRs (never 0.0.0.0/0).",
        validate=_public_endpoint,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="eks-secrets-encryption",
        description="EKS envelope-encrypts Kubernetes secrets with a KMS key.",
        validate=_secrets_encryption,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="eks-control-plane-logging",
        description="Every EKS control-plane log type goes to CloudWatch Logs.",
        validate=_logging,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"requiredLogTypes": {"type": "array", "items": {"type": "string"}, "default": list(LOG_TYPES)}}
        ),
    ),
    StackValidationPolicy(
        name="eks-api-reachable",
        description="A stack that installs Kubernetes objects through a private-only EKS endpoint admits its "
        "deployer's network to the cluster on 443.",
        validate=_api_reachable,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="eks-core-addons",
        description="An EKS cluster without EKS's self-managed add-ons has managed coredns, kube-proxy and "
        "vpc-cni add-ons in the stack.",
        validate=_core_addons,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="eks-one-access-entry-per-principal",
        description="No two EKS access entries (explicit, or EKS's own for a managed node group's role) for "
        "one principal.",
        validate=_one_entry_per_principal,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
