"""The first ``pulumi up`` on a fresh cluster: what must exist before each resource is created.

Three orderings the API server and Helm enforce and an offline plan cannot see by itself:
- a custom resource needs its CustomResourceDefinition: ordered after the Helm release that installs
  it (which chart installs which CRD: catalog/crds.py, each entry read in the chart at its
  pinned tag);
- a release whose pods select the system nodes waits (Helm's default 300 s) for pods that cannot be
  scheduled until the system node group exists: ordered after that node group; so is a release whose
  waited-for pods select no nodes at all (catalog/chart_pods.py), which only an untainted
  node group can run;
- an admission webhook with ``failurePolicy: Fail`` refuses every object it intercepts until its pods
  are Ready: each such object ordered after the release, which waits for them
  (catalog/webhooks.py).

"Ordered after" is the transitive closure of what the engine waits for before it creates a resource:
its ``dependencies`` (``depends_on``, a component's expanded children), its property dependencies, and
its parent (a child is registered only once its parent is, and a component registers only once its own
dependencies exist).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyResource, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from inference_platform.catalog.chart_pods import WAITED_PODS
from inference_platform.catalog.crds import BUILT_IN_GROUPS, CrdInstaller, crd_source
from inference_platform.catalog.webhooks import FAILING_WEBHOOKS, FailingWebhook, holds
from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import get
from inference_platform.policies.rules.helm import HELM_INSTALLS

RELEASE = "kubernetes:helm.sh/v3:Release"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"
SYSTEM_LABELS = {"node-role": "system"}
"""The system node group's label (inference_platform.catalog.pool_profile LABEL_NODE_ROLE=ROLE_SYSTEM)."""


def prerequisites(resource: PolicyResource) -> set[str]:
    """URNs of everything the engine has created before it creates ``resource`` (transitively)."""
    seen: dict[str, PolicyResource] = {}
    stack = [resource]
    while stack:
        current = stack.pop()
        for before in _direct(current):
            if before.urn not in seen:
                seen[before.urn] = before
                stack.append(before)
    return set(seen)


def _direct(resource: PolicyResource) -> Iterator[PolicyResource]:
    if resource.parent is not None:
        yield resource.parent
    yield from resource.dependencies or []
    for deps in (resource.property_dependencies or {}).values():
        yield from deps


def kubernetes_kind(resource_type: str) -> tuple[str, str, str] | None:
    """``kubernetes:<group>/<version>:<Kind>`` as (group, version, kind); None for other providers."""
    provider, _, rest = resource_type.partition(":")
    api, _, kind = rest.partition(":")
    group, _, version = api.rpartition("/")
    if provider != "kubernetes" or not group or not kind:
        return None
    return group, version, kind


def _value(values: Any, path: str, default: Any) -> Any:
    found = get(values or {}, path, _Missing)
    return default if found is _Missing else found


class _Missing:
    pass


def _each(resources: Iterable[PolicyResource], check) -> None:
    """``check`` each resource; one whose values are unknown during preview is judged on update instead of
    making the engine skip the whole rule."""
    for resource in resources:
        try:
            check(resource)
        except UnknownValueError:
            continue


def _chart(release: PolicyResource) -> str:
    return str(get(release.props, "chart", ""))


def installs(release: PolicyResource, installer: CrdInstaller) -> bool:
    """Whether this release installs the installer's CRDs with the values it sets."""
    if release.resource_type not in HELM_INSTALLS or _chart(release) != installer.chart.chart:
        return False
    try:
        if installer.crds_dir and get(release.props, "skipCrds", False):
            return False
        if installer.switch is not None:
            return bool(_value(get(release.props, "values"), installer.switch, installer.switch_default))
    except UnknownValueError:
        return True  # unknown during preview: the update's own check decides
    return True


def _defines(crd: PolicyResource, group: str, kind: str) -> bool:
    return (
        crd.resource_type == CRD and get(crd.props, "spec.group") == group and get(crd.props, "spec.names.kind") == kind
    )


def _crds_first(args: StackValidationArgs, report: ReportViolation) -> None:
    by_urn = {r.urn: r for r in args.resources}

    def check(resource: PolicyResource) -> None:
        parsed = kubernetes_kind(resource.resource_type)
        if parsed is None or parsed[0] in BUILT_IN_GROUPS:
            return
        group, _, kind = parsed
        source = crd_source(group, kind)
        if source is None:
            report(
                f"{resource.name}: no pinned chart is known to install the CRD of {group} {kind}; add the chart "
                "that does to catalog/crds.py (with its upstream file and tag) and order this after it",
                resource.urn,
            )
            return
        before = [by_urn[u] for u in prerequisites(resource) if u in by_urn]
        if any(_defines(r, group, kind) for r in before):
            return
        if any(installs(r, i) for r in before for i in source.installers):
            return
        charts = " or ".join(f"{i.chart.chart} {i.chart.version}" for i in source.installers)
        report(
            f"{resource.name}: {group} {kind} is created before its CRD exists; order it after the release of "
            f"{charts} that installs the CRD (depends_on)",
            resource.urn,
        )

    _each(args.resources, check)


def selectors(values: Any) -> Iterator[dict[str, Any]]:
    """Every ``nodeSelector`` mapping anywhere in a release's values."""
    if isinstance(values, Mapping):
        for key, value in values.items():
            if key == "nodeSelector" and isinstance(value, Mapping):
                yield {str(k): v for k, v in value.items()}
            else:
                yield from selectors(value)
    elif isinstance(values, Sequence) and not isinstance(values, (str, bytes)):
        for item in values:
            yield from selectors(item)


def _selects_system(selector: Mapping[str, Any]) -> bool:
    return all(selector.get(k) == v for k, v in SYSTEM_LABELS.items())


def _carries(node_group: PolicyResource, labels: Mapping[str, Any]) -> bool:
    own = get(node_group.props, "labels", {}) or {}
    return node_group.resource_type == NODE_GROUP and all(own.get(k) == v for k, v in labels.items())


def _unplaced(release: PolicyResource) -> list[str]:
    """Values paths of pods Helm waits for that this release leaves without a nodeSelector."""
    values = get(release.props, "values")
    return [
        path
        for pods in WAITED_PODS
        if _chart(release) == pods.chart.chart
        for path in pods.node_selectors
        if not _value(values, path, None)
    ]


def _nodes_first(args: StackValidationArgs, report: ReportViolation) -> None:
    groups = [r for r in args.resources if _carries(r, SYSTEM_LABELS)]
    untainted = [r for r in args.resources if r.resource_type == NODE_GROUP and not get(r.props, "taints")]

    def check(release: PolicyResource) -> None:
        before = prerequisites(release)
        if any(_selects_system(s) for s in selectors(get(release.props, "values"))):
            if groups and not {g.urn for g in groups} & before:
                names = ", ".join(g.name for g in groups)
                report(
                    f"{release.name}: its pods select the system nodes ({_labels(SYSTEM_LABELS)}) but the release "
                    f"is not ordered after the system node group ({names}); on a fresh cluster Helm waits for pods "
                    "that cannot be scheduled (depends_on the node group)",
                    release.urn,
                )
            return
        unplaced = _unplaced(release)
        if unplaced and untainted and not {g.urn for g in untainted} & before:
            names = ", ".join(g.name for g in untainted)
            report(
                f"{release.name}: Helm waits for pods with no nodeSelector ({', '.join(unplaced)}), which only an "
                f"untainted node group can run ({names}), but the release is not ordered after one "
                "(depends_on the node group; catalog/chart_pods.py)",
                release.urn,
            )

    _each((r for r in args.resources if r.resource_type in HELM_INSTALLS), check)


def _labels(labels: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


def failing(release: PolicyResource, webhook: FailingWebhook) -> bool:
    """Whether this release registers ``webhook`` with failurePolicy Fail, given the values it sets."""
    if release.resource_type not in HELM_INSTALLS or _chart(release) != webhook.chart.chart:
        return False
    values = get(release.props, "values")
    return all(holds(_value(values, path, default), wanted) for path, default, wanted in webhook.fails_when)


def _intercepted(webhook: FailingWebhook, resources: Iterable[PolicyResource], release: PolicyResource):
    for r in resources:
        if r.urn == release.urn:
            continue
        parsed = kubernetes_kind(r.resource_type)
        token = f"{parsed[0]}/{parsed[1]}:{parsed[2]}" if parsed else None
        if token in webhook.resource_types:
            yield r, f"a {parsed[2] if parsed else r.resource_type}"
        elif webhook.everywhere and r.resource_type in HELM_INSTALLS:
            yield r, "a release (its chart's objects)"
        elif webhook.everywhere and r.resource_type == ADDON:
            yield r, f"the EKS add-on {get(r.props, 'addonName', r.name)}"


def _webhooks_after_pods(args: StackValidationArgs, report: ReportViolation) -> None:
    _each(
        (r for r in args.resources if r.resource_type in HELM_INSTALLS),
        lambda release: _check_webhooks(release, args.resources, report),
    )


def _check_webhooks(release: PolicyResource, resources: list[PolicyResource], report: ReportViolation) -> None:
    for webhook in (w for w in FAILING_WEBHOOKS if failing(release, w)):
        if get(release.props, "skipAwait", False):
            report(
                f"{release.name}: registers {webhook.name} (failurePolicy Fail) with skipAwait, so nothing waits "
                "for its pods before the objects it intercepts are created",
                release.urn,
            )
        ahead = [
            f"{r.name} ({what})"
            for r, what in _intercepted(webhook, resources, release)
            if release.urn not in prerequisites(r)
        ]
        if ahead:
            kinds = ", ".join(t.rsplit(":", 1)[-1] for t in webhook.resource_types)
            report(
                f"{release.name}: registers {webhook.name} (failurePolicy Fail on {kinds}) but "
                f"{len(ahead)} resource(s) that create them are not ordered after it, and are refused until "
                f"its pods are Ready: {', '.join(sorted(ahead)[:5])}{' ...' if len(ahead) > 5 else ''}. Order them "
                "after the release or switch the webhook off (catalog/webhooks.py)",
                release.urn,
            )


POLICIES = [
    StackValidationPolicy(
        name="custom-resources-after-crds",
        description="Every custom resource is ordered after the release that installs its CRD.",
        validate=_crds_first,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="releases-after-system-nodes",
        description="Every Helm release whose pods select the system nodes is ordered after the system node group.",
        validate=_nodes_first,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="failing-webhooks-before-their-objects",
        description="No admission webhook with failurePolicy Fail is registered ahead of the objects it intercepts.",
        validate=_webhooks_after_pods,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
