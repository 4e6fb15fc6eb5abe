"""Public route rules: a route toward inference admits only the edge policy's allow-list of the OpenAI API.

- ``public-routes-allow-listed``: every HTTPRoute whose backends are in an inference namespace matches
  only ``Exact`` paths of ``components.edge.policy.OPENAI_ENDPOINTS`` (``/v1/models``,
  ``/v1/chat/completions``, ``/v1/completions`` and the OpenAI server's health), each with the method the
  policy gives it, and ``GET /v1/models/<id>`` of a single-segment model id. A ``PathPrefix`` or ``RegularExpression`` match, a match without a path and a rule
  without matches (both mean ``PathPrefix /`` in Gateway API v1, as bundled by Envoy Gateway v1.9.0) admit
  more; so does an ``Exact`` path of Triton's KServe v2 API (``/v2/...``: its metrics, health and internal
  checks stay inside the cluster, and its inference endpoints reach every model of the repository). A
  GRPCRoute toward inference is refused whatever it matches: the only gRPC API there is Triton's, whose
  ``ModelInfer`` names the model in the request body, so no route could keep internal models internal (issue
  20). Every version is judged alike (HTTPRoute v1 and v1beta1, GRPCRoute v1 and v1alpha2). A TCPRoute,
  TLSRoute (v1alpha2, v1alpha3) or UDPRoute toward inference is refused: it forwards whole connections, so
  neither a path allow-list nor an HTTP authentication filter applies.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, StackValidationArgs

from inference_platform.catalog.edge_policy import OPENAI_ENDPOINTS, model_path
from inference_platform.catalog.serving_contract import OPENAI_MODELS_PATH
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.edge import route_kind

HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
CONNECTION_ROUTES = ("TCPRoute", "TLSRoute", "UDPRoute")
INFERENCE_NAMESPACES = ["inference"]
# Gateway API v1 defaults: a rule without matches, and a match without a path, match PathPrefix "/".
DEFAULT_PATH = {"type": "PathPrefix", "value": "/"}
OPENAI_MODELS_PREFIX = OPENAI_MODELS_PATH + "/"


def _toward_inference(resource: Any, namespaces: set[str]) -> bool:
    namespace = get(resource.props, "metadata.namespace", "default")
    return any(
        get(ref, "namespace", namespace) in namespaces
        for rule in as_list(get(resource.props, "spec.rules"))
        for ref in as_list(get(rule, "backendRefs"))
    )


def _http_problems(props: Any, allowed: dict[str, str]) -> list[str]:
    out = []
    for rule in as_list(get(props, "spec.rules")):
        for match in as_list(get(rule, "matches")) or [{}]:
            path = get(match, "path") or DEFAULT_PATH
            kind, value = get(path, "type", "PathPrefix"), get(path, "value", "/")
            method = get(match, "method")
            if kind != "Exact":
                out.append(f"{kind} {value} admits paths beyond the public API")
            elif value not in allowed and not _model_path(value):
                out.append(f"Exact {value} is not a public endpoint")
            elif method != allowed.get(value, "GET"):
                out.append(
                    f"Exact {value} admits method {method or 'any'}; the public API takes {allowed.get(value, 'GET')}"
                )
    return out


def _model_path(path: str) -> bool:
    """``/v1/models/<one segment>``: a served model's retrieve endpoint (``policy.model_path``)."""
    try:
        return model_path(path.removeprefix(OPENAI_MODELS_PREFIX)) == path
    except ValueError:
        return False


def _routes_allow_listed(args: StackValidationArgs, report: ReportViolation) -> None:
    config = args.get_config()
    namespaces = set(config.get("namespaces") or INFERENCE_NAMESPACES)
    allowed_http = {e.path: e.method for e in OPENAI_ENDPOINTS}
    for resource in args.resources:
        kind = route_kind(resource.resource_type)
        if kind is None or not _toward_inference(resource, namespaces):
            continue
        at = f"{kind} {get(resource.props, 'metadata.namespace', 'default')}/{get(resource.props, 'metadata.name')}"
        if kind == "HTTPRoute":
            problems = _http_problems(resource.props, allowed_http)
        elif kind == "GRPCRoute":
            problems = [
                "gRPC toward inference is Triton's KServe v2 API, internal (ModelInfer names any model in its "
                "body): the public API is the OpenAI API over HTTP"
            ]
        else:
            problems = [f"a {kind} forwards whole connections to inference: no path allow-list or HTTP auth applies"]
        for problem in dict.fromkeys(problems):
            report(f"{at}: {problem} (admit only the edge policy's public endpoints)", resource.urn)


POLICIES = [
    StackValidationPolicy(
        name="public-routes-allow-listed",
        description="Gateway API routes to inference admit only the exact OpenAI endpoints (no path prefix, no "
        "regex, no KServe v2 path, no GRPCRoute).",
        validate=_routes_allow_listed,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "namespaces": {"type": "array", "items": {"type": "string"}, "default": INFERENCE_NAMESPACES},
            }
        ),
    ),
]
