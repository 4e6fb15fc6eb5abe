"""Evaluates a CrossGuard pack on recorded resources the way the engine's analyzer does.

Resource policies see each resource's inputs; stack policies see every resource with its parent,
dependencies and property dependencies resolved to PolicyResource objects. Component resources are judged
too, with the inputs they register, as the engine's analyzer does (``kubernetes:helm.sh/v4:Chart`` is a
component whose chart and version the pack must see; ``helm.v3.Chart`` registers none,
pulumi/pulumi-kubernetes#2144); only the root stack resource is left out. Enforcement levels come
from the policy, then the pack, then the stack's policy config file (``all`` or per policy), as in
``pulumi preview --policy-pack-config``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from inference_platform.offline_plan.recorder import RecordedResource

ROOT_STACK = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str
    urn: str | None
    message: str

    @property
    def mandatory(self) -> bool:
        return self.level == EnforcementLevel.MANDATORY.value


def evaluate(
    resources: Iterable[RecordedResource],
    policies: Iterable[Policy],
    *,
    pack_level: EnforcementLevel = EnforcementLevel.ADVISORY,
    config: Mapping[str, Any] | None = None,
) -> list[Violation]:
    config = dict(config or {})
    resources = list(resources)
    custom = [r for r in resources if _judged(r)]
    violations: list[Violation] = []
    stack_view: list[PolicyResource] | None = None
    # Deserialized once: every resource policy reads the same (read-only) props.
    inputs: list[tuple[RecordedResource, Any, PolicyResourceOptions]] | None = None
    for policy in policies:
        level = _level(policy, pack_level, config)
        if level == EnforcementLevel.DISABLED:
            continue
        policy_config = _policy_config(policy, config)

        def report(message: str, urn: str | None = None, *, _p=policy, _l=level, _default: str | None = None) -> None:
            violations.append(Violation(_p.name, _l.value, urn or _default, message))

        if isinstance(policy, ResourceValidationPolicy):
            inputs = inputs or [(r, _props(r.inputs), _options(r)) for r in custom]
            for r, props, options in inputs:
                args = ResourceValidationArgs(r.type, props, r.urn, r.name, options, None, policy_config)
                _call(policy.validate, args, lambda m, u=None, _r=r: report(m, _r.urn))
        elif isinstance(policy, StackValidationPolicy):
            stack_view = stack_view or _stack_view(resources)
            _call(policy.validate, StackValidationArgs(stack_view, policy_config), report)
    return violations


def _call(validate: Any, args: Any, report: Any) -> None:
    try:
        result = validate(args, report)
        if inspect.isawaitable(result):
            asyncio.run(_await(result))
    except (_NotApplicableError, UnknownValueError):
        # The engine skips a policy that reads a value unknown during preview; so do we.
        return


async def _await(result: Any) -> Any:
    return await result


def _props(wire: Mapping[str, Any]) -> Any:
    return unknown_checking_proxy(deserialize_properties(dict(wire)))


def _options(r: RecordedResource) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=r.protect,
        ignore_changes=list(r.ignore_changes),
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=list(r.additional_secret_outputs),
        parent=r.parent,
    )


def _stack_view(resources: list[RecordedResource]) -> list[PolicyResource]:
    """The judged resources (custom and component), each linked to its parent, dependencies and property
    dependencies.

    Links resolve against every recorded resource, as the engine's analyzer does (a custom resource's
    parent is usually a component, whose own dependencies its children wait for).
    """
    views = {
        r.urn: PolicyResource(r.type, _props({**r.inputs, **r.outputs}), r.urn, r.name, _options(r), None, None, [], {})
        for r in resources
    }
    for r in resources:
        view = views[r.urn]
        view.parent = views.get(r.parent or "")
        view.dependencies = [views[u] for u in r.dependencies if u in views]
        view.property_dependencies = {
            k: [views[u] for u in v if u in views] for k, v in r.property_dependencies.items()
        }
    return [views[r.urn] for r in resources if _judged(r)]


def _judged(r: RecordedResource) -> bool:
    return r.custom or r.type != ROOT_STACK


def _level(policy: Policy, pack_level: EnforcementLevel, config: Mapping[str, Any]) -> EnforcementLevel:
    level = policy.enforcement_level or pack_level
    for key in ("all", policy.name):
        entry = config.get(key)
        configured = entry if isinstance(entry, str) else (entry or {}).get("enforcementLevel")
        if configured:
            level = EnforcementLevel(configured)
    return level


def _policy_config(policy: Policy, config: Mapping[str, Any]) -> dict[str, Any]:
    """Schema defaults overlaid with the stack's values, as the engine hands them to the policy."""
    schema = policy.config_schema.properties if policy.config_schema else {}
    values = {k: v["default"] for k, v in (schema or {}).items() if isinstance(v, Mapping) and "default" in v}
    entry = config.get(policy.name)
    if isinstance(entry, Mapping):
        values.update({k: v for k, v in entry.items() if k != "enforcementLevel"})
    return values
