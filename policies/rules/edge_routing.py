"""Edge routing rules (issue 29): an EnvoyPatchPolicy may only add the prefix-affinity load bound, or the endpoint
picker's no-wait switch (``catalog.endpoint_picker``: Envoy Gateway v1.9.0 does not expose it).

- ``envoy-patch-policy-load-bound-only``: every ``EnvoyPatchPolicy`` of the stack is a JSON patch that ``add``s
  ``consistent_hashing_lb_config`` with a ``hash_balance_factor`` of at least 100 (Envoy refuses less) to an
  HTTPRoute rule's cluster (``httproute/<namespace>/<route>/rule/<n>``), and nothing else.

- ``envoy-patches-reach-rendered-clusters`` (stack): each HTTPRoute cluster a patch names is one Envoy Gateway renders
  (the stack's HTTPRoute ``<namespace>/<route>`` has a rule ``<n>`` with ``backendRefs``), and a route bounded on
  one rule is bounded on every rule with backends. Envoy Gateway v1.9.0 skips a patch whose cluster it cannot find
  and says so only in the policy's status (``internal/xds/translator/jsonpatch.go``, ``errResourceNotFound``), so
  a patch on a shifted rule index leaves the replicas unbounded with a green ``pulumi up``: the model rules put
  before the OpenAI route's own rule did exactly that to the ``rule/0`` patch (components/edge/model_routing.py).

Why: an EnvoyPatchPolicy rewrites the generated xDS directly (Envoy Gateway v1.9.0
``api/v1alpha1/envoypatchpolicy_types.go``): it can reach listeners, secrets and any filter, past every check the
typed policies get, and Envoy Gateway switches it on gateway-wide (``extensionApis.enableEnvoyPatchPolicy``). The
edge enables it for one reason, Envoy's bounded load on the Maglev cluster ``edge.routing: envoy`` renders
(``components/edge/routing.py``); any other patch is refused here, before it reaches a cluster.
"""

from __future__ import annotations

import re
from typing import Any

from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UnknownValueError

from inference_platform.catalog.endpoint_picker import LISTENER_TYPE, NO_WAIT_FIELD
from inference_platform.components.edge.routing import BALANCE_FACTOR_PATH, CLUSTER_TYPE
from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.props import as_document, as_list, get

CUSTOM_RESOURCE = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyPatchPolicy"
HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
_ROUTE_CLUSTER = re.compile(r"^httproute/(?P<namespace>[a-z0-9-]+)/(?P<route>[a-z0-9.-]+)/rule/(?P<rule>\d+)$")
_NO_WAIT_JSON_PATH = re.compile(
    r"^\$\.\.http_filters\[\?\(@\.name=='envoy\.filters\.http\.ext_proc/envoyextensionpolicy/[a-z0-9-]+/[a-z0-9.-]+"
    r"/extproc/\d+'\)\]\.typed_config$"
)


def _is_picker_no_wait(patch: Any) -> bool:
    """Exactly the endpoint picker's no-wait patch (``catalog.endpoint_picker.no_wait_patch``): ``add`` the boolean
    ``true`` at ``send_body_without_waiting_for_header_response`` of one ext_proc filter of a Gateway listener."""
    operation = get(patch, "operation") or {}
    json_path = str(get(operation, "jsonPath") or "")
    return (
        get(patch, "type") == LISTENER_TYPE
        and get(operation, "op") == "add"
        and get(operation, "path") == f"/{NO_WAIT_FIELD}"
        and get(operation, "value") is True
        and _NO_WAIT_JSON_PATH.match(json_path) is not None
    )


def patch_problems(spec: Any) -> list[str]:
    """Why ``spec`` (an EnvoyPatchPolicy's) is more than the load bound or the picker's no-wait switch; empty when
    it is exactly those."""
    patches = get(spec, "jsonPatches") or []
    if get(spec, "type") != "JSONPatch" or not patches:
        return ["is not a JSONPatch with patches"]
    out = []
    for i, patch in enumerate(patches):
        if _is_picker_no_wait(patch):
            continue
        operation = get(patch, "operation") or {}
        value = get(operation, "value") or {}
        factor = value.get("hash_balance_factor") if isinstance(value, dict) else None
        if get(patch, "type") != CLUSTER_TYPE or not _ROUTE_CLUSTER.match(str(get(patch, "name") or "")):
            out.append(
                f"jsonPatches[{i}] targets {get(patch, 'type')} {get(patch, 'name')!r}, not an HTTPRoute cluster"
            )
        elif (
            get(operation, "op") != "add" or get(operation, "path") != BALANCE_FACTOR_PATH or get(operation, "jsonPath")
        ):
            out.append(f"jsonPatches[{i}] is {get(operation, 'op')} {get(operation, 'path')!r}, not the load bound")
        # Numbers arrive as floats through the engine: an integral value is an integer.
        elif (
            set(value) != {"hash_balance_factor"}
            or isinstance(factor, bool)
            or not isinstance(factor, int | float)
            or factor != int(factor)
            or factor < 100
        ):
            out.append(f"jsonPatches[{i}] value {value!r}: expected only hash_balance_factor, an integer >= 100")
    return out


def _load_bound_only(args: Any, report: ReportViolation) -> None:
    if args.resource_type != CUSTOM_RESOURCE:
        return
    try:
        document = as_document(args.props) or {}
    except UnknownValueError:
        return
    name = get(document, "metadata.name") or args.name
    for problem in patch_problems(get(document, "spec") or {}):
        report(
            f"EnvoyPatchPolicy {name} {problem}: the edge patches Envoy only to bound its prefix-affinity hash "
            "(edge.routing envoy) and to let the endpoint picker read the body before it answers the headers "
            "(edge.routing inference-pool); write other changes as typed Envoy Gateway policies"
        )


def _document(props: Any) -> dict[str, Any] | None:
    try:
        return as_document(props)
    except UnknownValueError:
        return None


def _patches_reach_clusters(args: Any, report: ReportViolation) -> None:
    routes: dict[tuple[str, str], list[int]] = {}
    for resource in args.resources:
        if resource.resource_type != HTTP_ROUTE or (doc := _document(resource.props)) is None:
            continue
        key = (str(get(doc, "metadata.namespace") or ""), str(get(doc, "metadata.name") or ""))
        routes[key] = [i for i, rule in enumerate(as_list(get(doc, "spec.rules"))) if as_list(get(rule, "backendRefs"))]
    patched: dict[tuple[str, str], set[int]] = {}
    for resource in args.resources:
        if resource.resource_type != CUSTOM_RESOURCE or (doc := _document(resource.props)) is None:
            continue
        name = get(doc, "metadata.name") or resource.name
        for patch in as_list(get(doc, "spec.jsonPatches")):
            found = _ROUTE_CLUSTER.match(str(get(patch, "name") or ""))
            if get(patch, "type") != CLUSTER_TYPE or found is None:
                continue
            key, rule = (found["namespace"], found["route"]), int(found["rule"])
            patched.setdefault(key, set()).add(rule)
            if key not in routes:
                report(f"EnvoyPatchPolicy {name} patches {found[0]}, but the stack declares no HTTPRoute "
                       f"{key[0]}/{key[1]}: Envoy Gateway skips the patch", resource.urn)  # fmt: skip
            elif rule not in routes[key]:
                report(f"EnvoyPatchPolicy {name} patches {found[0]}, but rule {rule} of HTTPRoute {key[0]}/{key[1]} "
                       "has no backendRefs, so Envoy Gateway renders no such cluster and skips the patch (rules "
                       f"with backends: {routes[key]})", resource.urn)  # fmt: skip
    for key, rules in patched.items():
        missed = [i for i in routes.get(key, []) if i not in rules]
        if missed:
            report(f"HTTPRoute {key[0]}/{key[1]}: rules {missed} have backends but no load-bound patch while rules "
                   f"{sorted(rules)} do: their replicas would be hashed without a bound")  # fmt: skip


POLICIES = [
    ResourceValidationPolicy(
        name="envoy-patch-policy-load-bound-only",
        description="An EnvoyPatchPolicy only adds Envoy's bounded load (hash_balance_factor >= 100) to an HTTPRoute "
        "rule's cluster, or send_body_without_waiting_for_header_response to an EnvoyExtensionPolicy's ext_proc "
        "filter: any other xDS patch is refused.",
        validate=_load_bound_only,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="envoy-patches-reach-rendered-clusters",
        description="Each HTTPRoute cluster an EnvoyPatchPolicy patches is one Envoy Gateway renders (a rule with "
        "backendRefs), and a route bounded on one rule is bounded on all: a patch naming no cluster is skipped "
        "with a status condition only.",
        validate=_patches_reach_clusters,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
