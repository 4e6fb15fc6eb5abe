"""Public route rules: a route toward inference admits only the edge policy's allow-list of Triton's API.

- ``public-routes-allow-listed``: every HTTPRoute whose backends are in an inference namespace matches
  only ``Exact`` paths of ``inference_platform.components.edge.policy.public_http_endpoints`` (the public models' inference,
  metadata and readiness endpoints and the health endpoints). A ``PathPrefix`` or ``RegularExpression``
  match, a match without a path and a rule without matches (both mean ``PathPrefix /`` in Gateway API
  v1, as bundled by Envoy Gateway v1.9.0) admit more: ``/v2/logging``, ``/v2/repository/...``, the raw LLM
  step. Every GRPCRoute toward inference matches ``Exact`` service + method pairs of
  ``public_grpc_paths`` only (a match naming only the service is a prefix over every method, including
  ``LogSettings`` and ``RepositoryModelUnload``). gRPC carries the model name in the request body, so
  which model a gRPC inference names cannot be checked here.
  Every version is judged alike (HTTPRoute v1 and v1beta1, GRPCRoute v1 and v1alpha2: the same match
  fields and defaults). A TCPRoute, TLSRoute (v1alpha2, v1alpha3) or UDPRoute toward inference is refused:
  it forwards whole connections, so neither a path allow-list nor an HTTP authentication filter applies.
"""

from __future__ import annotations

from typing import Any

from inference_platform.components.edge.policy import PUBLIC_MODELS, public_grpc_paths, public_http_endpoints
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.edge import route_kind
from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
GRPC_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:GRPCRoute"
CONNECTION_ROUTES = ("TCPRoute", "TLSRoute", "UDPRoute")
INFERENCE_NAMESPACES = ["inference"]
# Gateway API v1 defaults: a rule without matches, and a match without a path, match PathPrefix "/".
DEFAULT_PATH = {"type": "PathPrefix", "value": "/"}


def _toward_inference(resource: Any, namespaces: set[str]) -> bool:
    namespace = get(resource.props, "metadata.namespace", "default")
    return any(
        get(ref, "namespace", namespace) in namespaces
        for rule in as_list(get(resource.props, "spec.rules"))
        for ref in as_list(get(rule, "backendRefs"))
    )


def _http_problems(props: Any, allowed: set[str]) -> list[str]:
    out = []
    for rule in as_list(get(props, "spec.rules")):
        for match in as_list(get(rule, "matches")) or [{}]:
            path = get(match, "path") or DEFAULT_PATH
            kind, value = get(path, "type", "PathPrefix"), get(path, "value", "/")
            if kind != "Exact":
                out.append(f"{kind} {value} admits paths beyond the public API")
            elif value not in allowed:
                out.append(f"Exact {value} is not a public endpoint")
    return out


def _grpc_problems(props: Any, allowed: set[str]) -> list[str]:
    out = []
    for rule in as_list(get(props, "spec.rules")):
        for match in as_list(get(rule, "matches")) or [{}]:
            method = get(match, "method")
            if not method:
                out.append("a match without a method admits every gRPC method")
                continue
            kind, service, name = get(method, "type", "Exact"), get(method, "service"), get(method, "method")
            if kind != "Exact" or not service or not name:
                out.append(f"{kind} service {service or '*'} method {name or '*'} admits more than named methods")
            elif f"/{service}/{name}" not in allowed:
                out.append(f"/{service}/{name} is not a public gRPC method")
    return out


def _routes_allow_listed(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    namespaces = set(config.get("namespaces") or INFERENCE_NAMESPACES)
    models = tuple(config.get("publicModels") or PUBLIC_MODELS)
    allowed_http = {e.path for e in public_http_endpoints(models)}
    allowed_grpc = set(public_grpc_paths())
    for resource in args.resources:
        kind = route_kind(resource.resource_type)
        if kind is None or not _toward_inference(resource, namespaces):
            continue
        at = f"{kind} {get(resource.props, 'metadata.namespace', 'default')}/{get(resource.props, 'metadata.name')}"
        if kind == "HTTPRoute":
            problems = _http_problems(resource.props, allowed_http)
        elif kind == "GRPCRoute":
            problems = _grpc_problems(resource.props, allowed_grpc)
        else:
            problems = [f"a {kind} forwards whole connections to inference: no path allow-list or HTTP auth applies"]
        for problem in dict.fromkeys(problems):
            report(f"{at}: {problem} (admit only the edge policy's public endpoints)", resource.urn)


POLICIES = [
    StackValidationPolicy(
        name="public-routes-allow-listed",
        description="Gateway API routes to inference admit only exact public endpoints (no path prefix, no "
        "regex, no service-wide gRPC match).",
        validate=_routes_allow_listed,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "namespaces": {"type": "array", "items": {"type": "string"}, "default": INFERENCE_NAMESPACES},
                "publicModels": {"type": "array", "items": {"type": "string"}, "default": list(PUBLIC_MODELS)},
            }
        ),
    ),
]
