"""The pack: its name, default enforcement and every rule, in one importable list."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pulumi_policy import EnforcementLevel, Policy

from inference_platform.policies.rules import (
    accelerator_scaling,
    alb_targets,
    backend_keepalive,
    batch,
    cost,
    edge,
    edge_routes,
    edge_routing,
    efa_nodes,
    eks,
    endpoint_picker,
    endpoints,
    envoy_gateway_features,
    envoy_gateway_policies,
    helm,
    iam,
    iam_exposure,
    image_cache,
    image_disk,
    jobs,
    keys,
    kubernetes_exposure,
    load_balancers,
    log_groups,
    model_lifecycle,
    model_routing,
    names,
    network,
    nodes,
    observability,
    ordering,
    pod_security,
    rate_limit_service,
    response_overrides,
    retention,
    scheduling,
    secret_sync,
    secret_values,
    secrets,
    storage,
    tagging,
    token_alarm,
    token_limits,
    verification,
    volumes,
    workloads,
)
from inference_platform.redaction import scrub

PACK_NAME = "inference-platform"
ENFORCEMENT_LEVEL = EnforcementLevel.MANDATORY

POLICIES: list[Policy] = [
    *network.POLICIES,
    *keys.POLICIES,
    *tagging.POLICIES,
    *storage.POLICIES,
    *secrets.POLICIES,
    *secret_sync.POLICIES,
    *eks.POLICIES,
    *nodes.POLICIES,
    *efa_nodes.POLICIES,
    *ordering.POLICIES,
    *helm.POLICIES,
    *iam.POLICIES,
    *workloads.POLICIES,
    *pod_security.POLICIES,
    *jobs.POLICIES,
    *scheduling.POLICIES,
    *volumes.POLICIES,
    *endpoints.POLICIES,
    *retention.POLICIES,
    *iam_exposure.POLICIES,
    *kubernetes_exposure.POLICIES,
    *secret_values.POLICIES,
    *cost.POLICIES,
    *accelerator_scaling.POLICIES,
    *edge.POLICIES,
    *rate_limit_service.POLICIES,
    *token_limits.POLICIES,
    *token_alarm.POLICIES,
    *response_overrides.POLICIES,
    *envoy_gateway_features.POLICIES,
    *envoy_gateway_policies.POLICIES,
    *alb_targets.POLICIES,
    *backend_keepalive.POLICIES,
    *image_cache.POLICIES,
    *image_disk.POLICIES,
    *edge_routes.POLICIES,
    *edge_routing.POLICIES,
    *endpoint_picker.POLICIES,
    *load_balancers.POLICIES,
    *log_groups.POLICIES,
    *model_lifecycle.POLICIES,
    *observability.POLICIES,
    *verification.POLICIES,
    *names.POLICIES,
    *batch.POLICIES,
    *model_routing.POLICIES,
]


def _scrub_reports(policy: Policy) -> None:
    """Every violation message passes :func:`~inference_platform.redaction.scrub` before the engine (or the
    offline plan) prints it: a rule quoting a resource's property (a URL, an image, an argument) must not
    put a credential into the preview, the CI log or the PR comment."""
    original: Callable[..., Awaitable[Any] | None] = policy.validate  # type: ignore[attr-defined]  # both kinds have it

    def validate(args: Any, report_violation: Callable[..., None]) -> Awaitable[Any] | None:
        return original(args, lambda message, urn=None: report_violation(scrub(str(message)), urn))

    policy.validate = validate  # type: ignore[attr-defined]  # as above: Policy itself declares no validate


for _policy in POLICIES:
    _scrub_reports(_policy)
