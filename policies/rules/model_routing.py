"""Rules for the resources of several models behind one URL (components/edge/model_routing.py, issue 32).

- ``edge-fallback-backends-in-cluster``: an Envoy Gateway ``Backend`` (the kind a fallback takes) names only
  Services of this cluster (``<service>.<namespace>.svc.cluster.local``): an IP, a Unix socket or an outside host
  would send prompts, and the client's identity header, somewhere no NetworkPolicy or policy of ours sees.
- ``edge-canaries-gated`` (production, by the stack's policy config): an HTTPRoute sending one model's requests to
  two Services (rules matching one ``x-inference-model``, as the canary renders, or one rule's weighted
  ``backendRefs``) is a canary, and the stack must run the verification Job that gates it
  (``inference:verification:VerificationJob``): a canary nobody measures is a rolling update in disguise. Settings
  refuse the same in their own words (models.canary.gate); this catches a canary written by hand.
- The same rule refuses a fallback ``Backend`` without the ``inference.platform/model`` label naming the model its
  Service serves: a fallback to another model is what ``models.fallbacks`` wrote, and the label keeps it visible.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, StackValidationArgs

from inference_platform.components.edge.model_routing import MODEL_HEADER, MODEL_LABEL
from inference_platform.policies.callbacks import (
    ReportViolation,
    ResourceValidationPolicy,
    StackValidationPolicy,
)
from inference_platform.policies.props import as_list, get

BACKEND = "kubernetes:gateway.envoyproxy.io/v1alpha1:Backend"
HTTP_ROUTE = "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
VERIFICATION_JOB = "inference:verification:VerificationJob"
CLUSTER_SUFFIX = ".svc.cluster.local"


def _backends_in_cluster(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != BACKEND:
        return
    name = get(args.props, "metadata.name")
    for endpoint in as_list(get(args.props, "spec.endpoints")):
        host = get(endpoint, "fqdn.hostname")
        if host is None:
            report(f"Backend {name}: an endpoint that is not a cluster Service's DNS name ({sorted(endpoint)})")
        elif not str(host).endswith(CLUSTER_SUFFIX) or str(host).count(".") != 4:
            report(f"Backend {name}: {host} is not <service>.<namespace>{CLUSTER_SUFFIX}")
    labels = get(args.props, "metadata.labels") or {}  # the label's key holds dots: not a path
    if get(args.props, "spec.fallback") and not labels.get(MODEL_LABEL):
        report(f"Backend {name}: a fallback without the {MODEL_LABEL} label naming the model it serves")


def _split_services(rules: list[Any]) -> list[str]:
    """The Services of the first split among ``rules``: one rule weighting two or more Services (Gateway API weighted
    ``backendRefs``), or one model's rules (their ``x-inference-model`` match) reaching two or more Services, as the
    canary renders (the routing script draws the canary's share into the tester header); empty when none."""
    per_model: dict[str, set[str]] = {}
    for rule in rules:
        services = [get(r, "name") for r in as_list(get(rule, "backendRefs"))
                    if get(r, "kind", "Service") == "Service" and get(r, "weight", 1) > 0]  # fmt: skip
        if len(services) > 1:
            return services
        models = {get(h, "value") for m in as_list(get(rule, "matches")) for h in as_list(get(m, "headers"))
                  if get(h, "name") == MODEL_HEADER}  # fmt: skip
        for model in models:
            per_model.setdefault(model, set()).update(services)
    return next((sorted(s) for s in per_model.values() if len(s) > 1), [])


def _canaries_gated(args: StackValidationArgs, report: ReportViolation) -> None:
    if not args.get_config().get("production"):
        return
    if any(r.resource_type == VERIFICATION_JOB for r in args.resources):
        return
    for resource in args.resources:
        if resource.resource_type != HTTP_ROUTE:
            continue
        services = _split_services(as_list(get(resource.props, "spec.rules")))
        if services:
            report(
                f"HTTPRoute {get(resource.props, 'metadata.name')}: requests for one model are split over "
                f"{', '.join(services)}, and no verification Job gates it (verification.enabled, models.canary.gate)",
                resource.urn,
            )


POLICIES = [
    ResourceValidationPolicy(
        name="edge-fallback-backends-in-cluster",
        description="Envoy Gateway Backends (fallbacks) name only this cluster's Services and the model they serve.",
        validate=_backends_in_cluster,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="edge-canaries-gated",
        description="In production, one model's requests split over two Services (a canary) need the verification Job.",
        validate=_canaries_gated,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(properties={"production": {"type": "boolean", "default": False}}),
    ),
]
