"""One Envoy Gateway policy of a kind per target: what Envoy Gateway v1.9.0 does with a second one.

Envoy Gateway v1.9.0 attaches at most one ``EnvoyExtensionPolicy``, ``BackendTrafficPolicy``, ``SecurityPolicy`` or
``ClientTrafficPolicy`` to one target: a Gateway, one of its listeners (``sectionName``), a route, one of its rules
(``sectionName``). The policies of a kind are sorted by creation time, then namespace/name
(``internal/gatewayapi/resource/resource.go``); each target is claimed by the first, and every later policy naming the
same target gets ``Accepted: False``, reason ``Conflicted`` ("Unable to target HTTPRoute <name>, another
EnvoyExtensionPolicy has already attached to it", ``resolveEnvoyExtensionPolicyRouteTargetRef`` in
``internal/gatewayapi/envoyextensionpolicy.go``; the same check in ``backendtrafficpolicy.go``,
``securitypolicy.go`` and ``clienttrafficpolicy.go``) and does nothing there. The plan shows both as valid custom
resources: only the controller's status would say one is ignored. ``mergeType`` does not lift the limit: it merges
a route's policy into the policy of its parent Gateway or listener (another target), never two policies of one
route. A policy on a Gateway and one on a listener of it are different targets (the listener's overrides).

tests/data/upstream/envoy_gateway_one_policy_per_target.json pins each check with its file and line at the tag.
Used by the pack's ``envoy-gateway-one-policy-per-target`` (policies/rules/envoy_gateway_policies.py),
``components.edge.gateway_api.gateway_summary`` (so the two renderings' agreement test refuses it) and the local
edge (``inferctl.serving.edge_envoy.render_bootstrap``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

ENVOY_GATEWAY_GROUP = "gateway.envoyproxy.io"
GATEWAY_GROUP = "gateway.networking.k8s.io"
POLICY_KINDS = ("BackendTrafficPolicy", "ClientTrafficPolicy", "EnvoyExtensionPolicy", "SecurityPolicy")
"""The Envoy Gateway policy kinds that take one policy per target (v1.9.0)."""
UPSTREAM = "envoyproxy/gateway@v1.9.0"
SOURCE = {
    "BackendTrafficPolicy": "internal/gatewayapi/backendtrafficpolicy.go",
    "ClientTrafficPolicy": "internal/gatewayapi/clienttrafficpolicy.go",
    "EnvoyExtensionPolicy": "internal/gatewayapi/envoyextensionpolicy.go",
    "SecurityPolicy": "internal/gatewayapi/securitypolicy.go",
}

Target = tuple[str, str, str, str, str | None]
"""(namespace, group, kind, name, sectionName) of one policy target."""


def policy_targets(policy: Mapping[str, Any], objects: Iterable[Mapping[str, Any]] = ()) -> list[Target]:
    """The targets ``policy`` (a manifest) names: ``targetRefs``, the deprecated ``targetRef``, and the objects of
    ``objects`` its ``targetSelectors`` match (kind and labels, in the policy's namespace: a selector names no
    section). Each target once."""
    namespace = policy.get("metadata", {}).get("namespace") or "default"
    spec = policy.get("spec") or {}
    refs = [*(spec.get("targetRefs") or []), *([spec["targetRef"]] if spec.get("targetRef") else [])]
    out: list[Target] = [
        (namespace, ref.get("group", GATEWAY_GROUP), ref["kind"], ref["name"], ref.get("sectionName")) for ref in refs
    ]
    objects = list(objects)
    for selector in spec.get("targetSelectors") or []:
        wanted = (selector.get("matchLabels") or {}).items()
        for o in objects:
            meta = o.get("metadata", {})
            same_kind = o.get("kind") == selector.get("kind") and (meta.get("namespace") or "default") == namespace
            if same_kind and wanted <= (meta.get("labels") or {}).items():
                out.append((namespace, selector.get("group", GATEWAY_GROUP), o["kind"], meta["name"], None))
    return list(dict.fromkeys(out))


def target_name(target: Target) -> str:
    namespace, _, kind, name, section = target
    return f"{kind} {namespace}/{name}" + (f" section {section}" if section else "")


def conflicts(objects: Iterable[Mapping[str, Any]]) -> list[tuple[str, Target, list[str]]]:
    """(policy kind, target, the policies' names) for every target that two or more policies of one kind name."""
    objects = list(objects)
    claims: dict[tuple[str, Target], list[str]] = {}
    for o in objects:
        kind = o.get("kind")
        if kind not in POLICY_KINDS or not str(o.get("apiVersion", "")).startswith(ENVOY_GATEWAY_GROUP):
            continue
        name = o.get("metadata", {}).get("name", "?")
        for target in policy_targets(o, objects):
            claims.setdefault((str(kind), target), []).append(name)
    return [(kind, target, names) for (kind, target), names in claims.items() if len(names) > 1]


def conflict_message(kind: str, target: Target, names: list[str]) -> str:
    return (
        f"{kind}s {', '.join(sorted(names))} all target {target_name(target)}: Envoy Gateway v1.9.0 attaches one "
        f"{kind} per target and marks every later one (by creation time, then namespace/name) Conflicted, "
        f"ignored there ({SOURCE[kind]}); put everything the target needs in one {kind}"
    )


def conflict_problems(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per target claimed by two or more policies of one kind (empty: the controller accepts them all)."""
    return [conflict_message(kind, target, names) for kind, target, names in conflicts(objects)]
