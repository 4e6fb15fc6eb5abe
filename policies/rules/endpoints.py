"""Interface endpoints a stack says it needs: every VPC of the stack has one per listed service.

The list is policy config (``requiredServices``, e.g. policies/config/prod.json): a production stack
whose settings drop, say, ``eks-auth`` would otherwise send every pod's credential exchange through
the NAT gateways without anyone noticing.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs

from inference_platform.catalog.endpoint_services import KNOWN_SERVICES
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import get

VPC = "aws:ec2/vpc:Vpc"
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"


def service_of(service_name: str) -> str:
    """``com.amazonaws.us-east-1.ecr.api`` -> ``ecr.api``."""
    parts = str(service_name).split(".")
    return ".".join(parts[3:]) if len(parts) > 3 and parts[:2] == ["com", "amazonaws"] else str(service_name)


def _required_endpoints(args: StackValidationArgs, report: ReportViolation) -> None:
    required = [str(s) for s in args.get_config().get("requiredServices") or []]
    if not required:
        return
    unknown = sorted(set(required) - set(KNOWN_SERVICES))
    if unknown:
        report(f"policy config requiredServices names unknown services: {', '.join(unknown)}")
    found: dict[str, set[str]] = {}
    for resource in args.resources:
        if resource.resource_type != ENDPOINT or get(resource.props, "vpcEndpointType", "Gateway") != "Interface":
            continue
        vpcs = {dep.urn for dep in resource.property_dependencies.get("vpcId", [])} or {get(resource.props, "vpcId")}
        for vpc in vpcs:
            found.setdefault(str(vpc), set()).add(service_of(get(resource.props, "serviceName", "")))
    for resource in args.resources:
        if resource.resource_type != VPC:
            continue
        have = found.get(resource.urn, set()) | found.get(str(get(resource.props, "id")), set())
        missing = [s for s in required if s not in have]
        if missing:
            report(
                f"{resource.name}: no interface endpoint for {', '.join(missing)}; these calls would leave through "
                "NAT (network.interfaceEndpoints / interfaceEndpointServices)",
                resource.urn,
            )


POLICIES = [
    StackValidationPolicy(
        name="vpc-interface-endpoints",
        description="Every VPC has an interface endpoint for each service the stack's policy config requires.",
        validate=_required_endpoints,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "requiredServices": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": [],
                    "description": "interface endpoint services (inference_platform.catalog.endpoint_services) every VPC "
                    "must have; empty for stacks that go through NAT",
                }
            }
        ),
    ),
]
