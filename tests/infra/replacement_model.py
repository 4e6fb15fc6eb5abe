"""A thin model of what the Pulumi engine would do between two plans, and on delete.

There is no engine here, so two runs of the program under the recording mock engine stand for the old
and the new state: resources pair by URN, and a custom resource is *replaced* when an input that forces
a new resource upstream changed (tests/data/upstream/replacement.json, each list read in the provider's
source). A replacement can succeed when the old and new resource do not share a fixed physical name, or
when it is delete-before-replace; the default (create-before-delete) with one name collides
(EKS: ``ResourceInUseException``). Deletes follow the engine's graph: a resource is deleted before
everything it depends on (dependencies, property dependencies, parent, provider, deletedWith).

Limits, on purpose: the mocks give each resource an id derived from its URN, so a replaced resource
keeps its id and outputs here (its dependents' inputs do not change through it); provider-side diffs
(defaults, normalisation, computed values) are not modelled, only the program's inputs; what a
resource's provider does on delete (waits, finalizers) is taken from the pinned facts, not run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from inference_platform.offline_plan.recorder import RecordedResource

FACTS = Path(__file__).resolve().parents[1] / "data" / "upstream" / "replacement.json"
MISSING = object()


@cache
def facts() -> dict[str, Any]:
    return json.loads(FACTS.read_text())


def get_path(inputs: dict[str, Any], path: str) -> Any:
    value: Any = inputs
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value


@dataclass(frozen=True)
class Replacement:
    urn: str
    type: str
    fields: tuple[str, ...]
    """The replace-forcing inputs that changed."""
    old_name: Any
    new_name: Any
    delete_before_replace: bool

    @property
    def collides(self) -> bool:
        """Create-before-delete under the same physical name: the create fails."""
        named = self.old_name is not MISSING and self.old_name != (MISSING,) * 2
        return not self.delete_before_replace and named and self.old_name == self.new_name


def replacements(old: list[RecordedResource], new: list[RecordedResource]) -> list[Replacement]:
    """The modelled resources of ``new`` that the engine would replace, given ``old``."""
    table = facts()["forceNew"]
    before = {r.urn: r for r in old}
    out = []
    for r in new:
        spec = table.get(r.type)
        prior = before.get(r.urn)
        if spec is None or prior is None:
            continue
        changed = tuple(f for f in spec["fields"] if get_path(prior.inputs, f) != get_path(r.inputs, f))
        if changed:
            name = spec["physicalName"]
            paths = [name] if isinstance(name, str) else name
            out.append(
                Replacement(
                    urn=r.urn,
                    type=r.type,
                    fields=changed,
                    old_name=_identity(prior.inputs, paths),
                    new_name=_identity(r.inputs, paths),
                    delete_before_replace=r.delete_before_replace,
                )
            )
    return out


def changed(old: list[RecordedResource], new: list[RecordedResource]) -> set[str]:
    """URNs whose inputs differ (updates and replacements alike)."""
    before = {r.urn: r.inputs for r in old}
    return {r.urn for r in new if r.urn in before and before[r.urn] != r.inputs}


def direct_dependencies(resource: RecordedResource) -> set[str]:
    """What the engine counts as a resource's dependencies (DependenciesOf, minus component expansion)."""
    deps = set(resource.dependencies)
    for urns in resource.property_dependencies.values():
        deps.update(urns)
    if resource.parent:
        deps.add(resource.parent)
    if resource.provider:
        deps.add(resource.provider)
    if resource.deleted_with:
        deps.add(resource.deleted_with)
    return deps


def dependency_closure(resources: list[RecordedResource]) -> dict[str, set[str]]:
    """URN -> every URN it depends on, directly or not. A dependency on a component also covers the
    component's children (the engine expands component dependencies)."""
    children: dict[str, set[str]] = {}
    for r in resources:
        if r.parent:
            children.setdefault(r.parent, set()).add(r.urn)
    direct = {}
    for r in resources:
        deps = direct_dependencies(r)
        for d in list(deps):
            if d != r.parent:
                deps |= _descendants(d, children) - {r.urn}
        direct[r.urn] = deps
    closure: dict[str, set[str]] = {}

    def visit(urn: str, trail: frozenset[str]) -> set[str]:
        if urn in closure:
            return closure[urn]
        out: set[str] = set()
        for d in direct.get(urn, ()):
            if d in trail:
                continue
            out.add(d)
            out |= visit(d, trail | {d})
        closure[urn] = out
        return out

    for urn in direct:
        visit(urn, frozenset({urn}))
    return closure


def deleted_before(closure: dict[str, set[str]], first: str, then: str) -> bool:
    """Whether the engine deletes ``first`` before ``then`` (``first`` depends on ``then``)."""
    return then in closure.get(first, set())


def delete_awaited(resource: RecordedResource) -> bool:
    """pulumi-kubernetes waits on delete until the object is gone, unless skipAwait is set on a legacy kind."""
    if not resource.type.startswith("kubernetes:"):
        return True
    annotations = (resource.inputs.get("metadata") or {}).get("annotations") or {}
    if str(annotations.get("pulumi.com/skipAwait", "")).lower() != "true":
        return True
    api_kind = "/".join(resource.type.split(":")[1:]).replace("core/v1/", "v1/")
    return api_kind not in facts()["pulumiKubernetes"]["skipAwaitAlsoSkipsDeleteFor"]


def _identity(inputs: dict[str, Any], paths: list[str]) -> Any:
    """The physical name, or the tuple of inputs that together identify the cloud object."""
    values = tuple(get_path(inputs, p) for p in paths)
    return values[0] if len(values) == 1 else values


def _descendants(urn: str, children: dict[str, set[str]]) -> set[str]:
    out: set[str] = set()
    stack = list(children.get(urn, ()))
    while stack:
        c = stack.pop()
        if c not in out:
            out.add(c)
            stack.extend(children.get(c, ()))
    return out
