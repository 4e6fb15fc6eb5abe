"""The pack: its name, default enforcement and every rule, in one importable list."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Policy

from policies.rules import (
    accelerator_scaling,
    cost,
    edge,
    edge_routes,
    eks,
    endpoints,
    iam,
    iam_exposure,
    jobs,
    keys,
    kubernetes_exposure,
    load_balancers,
    log_groups,
    model_lifecycle,
    names,
    network,
    nodes,
    observability,
    ordering,
    pod_security,
    rate_limit_service,
    retention,
    secret_sync,
    secret_values,
    secrets,
    storage,
    tagging,
    verification,
    volumes,
    workloads,
)

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
    *ordering.POLICIES,
    *iam.POLICIES,
    *workloads.POLICIES,
    *pod_security.POLICIES,
    *jobs.POLICIES,
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
    *edge_routes.POLICIES,
    *load_balancers.POLICIES,
    *log_groups.POLICIES,
    *model_lifecycle.POLICIES,
    *observability.POLICIES,
    *verification.POLICIES,
    *names.POLICIES,
]
