"""Interface endpoints: for the services a stack says it needs, and for every AWS API its pods are granted.

- ``vpc-interface-endpoints``: every VPC of the stack has one per service of the policy config's list
  (``requiredServices``, e.g. policies/config/prod.json): a production stack whose settings drop, say,
  ``eks-auth`` would otherwise send every pod's credential exchange through the NAT gateways unnoticed.
- ``vpc-endpoints-for-called-services``: in a VPC that has interface endpoints (the stack keeps its AWS calls
  private), every AWS API a pod is granted (the actions of the policies of each role EKS Pod Identity may assume,
  ``pods.eks.amazonaws.com``) has its endpoint (``catalog.endpoint_services.IAM_PREFIX_ENDPOINTS``); an API the
  catalog has no endpoint for is one it lists as reached through NAT (``THROUGH_NAT``), and a VPC without NAT
  may not need one; any other prefix is refused until classified. The list above drifted once (the batch lane's
  SQS calls from private subnets had no endpoint, issue 28): this rule reads the calls from the grants instead.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs

from inference_platform.catalog.endpoint_services import KNOWN_SERVICES, THROUGH_NAT, endpoints_for_action
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_document, as_list, get, statements

VPC = "aws:ec2/vpc:Vpc"
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
ROLE = "aws:iam/role:Role"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
POLICY = "aws:iam/policy:Policy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
NAT = "aws:ec2/natGateway:NatGateway"
POD_IDENTITY = "pods.eks.amazonaws.com"


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
    found = _interface_endpoints(list(args.resources))
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


def _interface_endpoints(resources: list[Any]) -> dict[str, set[str]]:
    """VPC (URN or id) -> the services of its interface endpoints."""
    found: dict[str, set[str]] = {}
    for resource in resources:
        if resource.resource_type != ENDPOINT or get(resource.props, "vpcEndpointType", "Gateway") != "Interface":
            continue
        vpcs = {dep.urn for dep in resource.property_dependencies.get("vpcId", [])} or {get(resource.props, "vpcId")}
        for vpc in vpcs:
            found.setdefault(str(vpc), set()).add(service_of(get(resource.props, "serviceName", "")))
    return found


def _pod_roles(resources: list[Any]) -> dict[str, Any]:
    out = {}
    for resource in resources:
        if resource.resource_type != ROLE:
            continue
        trust = as_document(get(resource.props, "assumeRolePolicy"))
        principals = [str(p) for s in statements(trust) for p in as_list(get(s, "Principal.Service"))]
        if POD_IDENTITY in principals:
            out[resource.urn] = resource
    return out


def _granted_actions(resources: list[Any], roles: dict[str, Any]) -> list[tuple[str, str]]:
    """(action, the role or policy granting it) of every Allow statement reaching a pod role."""
    documents: list[tuple[Any, str]] = []
    for role in roles.values():
        documents += [(as_document(get(p, "policy")), role.name) for p in as_list(get(role.props, "inlinePolicies"))]
    policies = {r.urn: r for r in resources if r.resource_type == POLICY}
    for resource in resources:
        targets = {d.urn for d in resource.property_dependencies.get("role", [])}
        if not targets & set(roles):
            continue
        if resource.resource_type == ROLE_POLICY:
            documents.append((as_document(get(resource.props, "policy")), resource.name))
        elif resource.resource_type == ATTACHMENT:
            for dep in resource.property_dependencies.get("policyArn", []):
                if dep.urn in policies:
                    documents.append((as_document(get(policies[dep.urn].props, "policy")), dep.name))
    return [
        (str(action), name)
        for document, name in documents
        for statement in statements(document)
        if statement.get("Effect") == "Allow"
        for action in as_list(statement.get("Action"))
    ]


def _called_services_have_endpoints(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    endpoints = _interface_endpoints(resources)
    roles = _pod_roles(resources)
    if not roles:
        return
    needed: dict[str, set[str]] = {}
    through_nat: dict[str, set[str]] = {}
    for action, granted_by in _granted_actions(resources, roles):
        services = endpoints_for_action(action)
        prefix = action.split(":", 1)[0].lower()
        if services is None:
            report(
                f"{granted_by}: pods are granted {action}, an AWS API the endpoint catalog does not classify; add "
                f"its prefix {prefix!r} to catalog/endpoint_services.py (IAM_PREFIX_ENDPOINTS or THROUGH_NAT)"
            )
            continue
        for service in services:
            needed.setdefault(service, set()).add(granted_by)
        if not services and prefix in THROUGH_NAT:
            through_nat.setdefault(prefix, set()).add(granted_by)
    has_nat = any(r.resource_type == NAT for r in resources)
    for vpc in (r for r in resources if r.resource_type == VPC):
        have = endpoints.get(vpc.urn, set()) | endpoints.get(str(get(vpc.props, "id")), set())
        if not have:
            continue  # this VPC keeps no AWS call private: its pods reach every API through NAT
        for service in sorted(needed):
            if service not in have:
                report(
                    f"{vpc.name}: pods call {service} ({', '.join(sorted(needed[service]))}) and the VPC has no "
                    f"interface endpoint for it, so those calls leave through NAT (or fail without it): add "
                    f"{service!r} (network.interfaceEndpointServices, catalog/endpoint_services.py)",
                    vpc.urn,
                )
        if not has_nat:
            for prefix in sorted(through_nat):
                report(
                    f"{vpc.name}: pods call {prefix} ({THROUGH_NAT[prefix]}), which has no interface endpoint here, "
                    "and the stack has no NAT gateway to reach it",
                    vpc.urn,
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
    StackValidationPolicy(
        name="vpc-endpoints-for-called-services",
        description="In a VPC with interface endpoints, every AWS API a pod is granted has its endpoint (or is "
        "classified as reached through NAT, and the stack has NAT).",
        validate=_called_services_have_endpoints,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
