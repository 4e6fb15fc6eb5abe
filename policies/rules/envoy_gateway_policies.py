"""Envoy Gateway attachment rule: one policy of a kind per target.

- ``envoy-gateway-one-policy-per-target``: no two EnvoyExtensionPolicies, BackendTrafficPolicies, SecurityPolicies or
  ClientTrafficPolicies of the stack name the same target (namespace, kind, name, sectionName).

Why: Envoy Gateway v1.9.0 attaches one policy of each of these kinds to a target and marks every later one
``Conflicted``, where it does nothing (``catalog.envoy_gateway_policies`` cites the checks; pinned in
tests/data/upstream/envoy_gateway_one_policy_per_target.json). Both policies are valid custom resources: the plan,
the apply and the local Envoy (which renders every filter straight into its bootstrap) would all look right while the
cluster silently drops one, e.g. the token metering script in a second EnvoyExtensionPolicy on the OpenAI route.
``mergeType`` does not lift it (it merges a route's policy into its Gateway's, another target).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from inference_platform.catalog.envoy_gateway_policies import (
    ENVOY_GATEWAY_GROUP,
    POLICY_KINDS,
    conflict_message,
    conflicts,
)
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_document

PREFIX = f"kubernetes:{ENVOY_GATEWAY_GROUP}/"
GATEWAY_PREFIX = "kubernetes:gateway.networking.k8s.io/"


def _manifests(resources: list[Any]) -> tuple[list[tuple[Any, dict[str, Any]]], bool]:
    """(resource, manifest) of every policy of the four kinds and every Gateway API object (what a selector may
    match), and whether a policy was left unknown (a preview: the update's check judges it)."""
    out, unknown = [], False
    for resource in resources:
        kind = resource.resource_type
        policy = kind.startswith(PREFIX) and kind.rsplit(":", 1)[-1] in POLICY_KINDS
        if not (policy or kind.startswith(GATEWAY_PREFIX)):
            continue
        try:
            manifest = as_document(resource.props)
        except UnknownValueError:
            unknown = unknown or policy
            continue
        if manifest is not None:
            manifest.setdefault("kind", kind.rsplit(":", 1)[-1])
            manifest.setdefault("apiVersion", kind.split(":")[1])
            out.append((resource, manifest))
    return out, unknown


def _one_policy_per_target(args: StackValidationArgs, report: ReportViolation) -> None:
    found, unknown = _manifests(list(args.resources))
    if unknown:
        return
    by_name = {(m.get("kind"), m.get("metadata", {}).get("name")): r for r, m in found}
    for kind, target, names in conflicts(m for _, m in found):
        # Reported on every policy naming the target: which one loses depends on creation times the plan lacks.
        for name in sorted(names):
            report(conflict_message(kind, target, names), by_name[(kind, name)].urn)


POLICIES = [
    StackValidationPolicy(
        name="envoy-gateway-one-policy-per-target",
        description="No two Envoy Gateway policies of one kind (EnvoyExtensionPolicy, BackendTrafficPolicy, "
        "SecurityPolicy, ClientTrafficPolicy) target the same Gateway, listener, route or route rule: Envoy Gateway "
        "v1.9.0 attaches one and ignores the rest as Conflicted.",
        validate=_one_policy_per_target,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
