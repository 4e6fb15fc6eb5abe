"""EKS control-plane rules: no world-open API endpoint, secrets envelope-encrypted, every log type on.

Unset properties are read with EKS's own defaults (the engine shows only what the program set): the
public endpoint is ON unless ``endpointPublicAccess`` is false, and open to 0.0.0.0/0 unless
``publicAccessCidrs`` says otherwise.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from policies.props import as_list, get

CLUSTER = "aws:eks/cluster:Cluster"
WORLD = frozenset({"0.0.0.0/0", "::/0"})
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")


def _public_endpoint(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != CLUSTER:
        return
    if get(args.props, "vpcConfig.endpointPublicAccess", True) is False:
        return
    cidrs = set(as_list(get(args.props, "vpcConfig.publicAccessCidrs"))) or {"0.0.0.0/0"}
    if cidrs & WORLD:
        report("the public API endpoint is open to 0.0.0.0/0; turn it off or list the CIDRs that need it")


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
]
