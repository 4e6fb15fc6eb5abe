"""The first ``pulumi up`` on a fresh cluster, measured on each shipped stack's recorded plan (issue 17 §3).

The plan file ``inferctl plan`` writes (``build/plan/<stack>.json``; here written to a temporary directory)
records each resource's parent, dependencies and property dependencies, components included. What the
engine has created before it creates a resource is the closure of those links (a child registers only
after its parent, a component only after its own dependencies). Measured here independently of the
policies (policies/rules/ordering.py), which enforce the same at plan time:
- every custom resource reaches a release of the chart that installs its CRD (catalog/crds.py),
  and every SecretProviderClass its namespace;
- every release whose pods select the system nodes reaches the system node group, and Envoy Gateway, whose
  pods select no nodes (catalog/chart_pods.py), an untainted one;
- the load-balancer controller registers no cluster-wide Fail webhook, and every object its remaining
  Fail webhooks intercept (Ingress, IngressClassParams) reaches its release.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from inference_platform.catalog import edge_charts
from inference_platform.catalog.crds import BUILT_IN_GROUPS, crd_source
from inference_platform.inferctl.plan.command import write_outputs
from tests.conftest import STACKS

RELEASE = "kubernetes:helm.sh/v3:Release"
SYSTEM = {"node-role": "system"}


@pytest.fixture(scope="module")
def recorded(stack_plan, tmp_path_factory) -> dict[str, dict[str, dict[str, Any]]]:
    out = tmp_path_factory.mktemp("plan")
    plans = {}
    for stack in STACKS:
        write_outputs(stack_plan(stack), out)
        plans[stack] = {r["urn"]: r for r in json.loads((out / f"{stack}.json").read_text())["resources"]}
    return plans


def closure(resources: dict[str, dict[str, Any]], urn: str) -> set[str]:
    seen: set[str] = set()
    todo = [urn]
    while todo:
        r = resources[todo.pop()]
        direct = {*r.get("dependencies", []), *(u for us in r.get("propertyDependencies", {}).values() for u in us)}
        if r.get("parent"):
            direct.add(r["parent"])
        for u in direct - seen:
            if u in resources:
                seen.add(u)
                todo.append(u)
    return seen


def _kind(resource_type: str) -> tuple[str, str] | None:
    provider, _, rest = resource_type.partition(":")
    api, _, kind = rest.partition(":")
    group = api.rpartition("/")[0]
    return (group, kind) if provider == "kubernetes" and group and group not in BUILT_IN_GROUPS else None


def _selects_system(values: Any) -> bool:
    if isinstance(values, dict):
        selector = values.get("nodeSelector")
        if isinstance(selector, dict) and all(selector.get(k) == v for k, v in SYSTEM.items()):
            return True
        return any(_selects_system(v) for v in values.values())
    return isinstance(values, list) and any(_selects_system(v) for v in values)


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_reaches_the_release_of_its_crd(recorded, stack):
    resources = recorded[stack]
    custom = {u: _kind(r["type"]) for u, r in resources.items() if r["custom"] and _kind(r["type"])}
    assert custom, "the stack plans custom resources"
    missing = []
    for urn, (group, kind) in custom.items():
        source = crd_source(group, kind)
        assert source is not None, f"{stack}: no pinned chart installs {group} {kind} ({urn})"
        charts = {i.chart.chart for i in source.installers}
        before = closure(resources, urn)
        if not any(resources[u]["type"] == RELEASE and resources[u]["inputs"].get("chart") in charts for u in before):
            missing.append(f"{resources[urn]['name']} ({kind} needs {sorted(charts)})")
    assert missing == [], f"{stack}: created before their CRD: {missing}"


@pytest.mark.parametrize("stack", STACKS)
def test_every_secret_provider_class_reaches_its_namespace(recorded, stack):
    # prod's verification class reached nothing at all before (neither the CSI driver nor its namespace).
    resources = recorded[stack]
    classes = [u for u, r in resources.items() if r["type"].endswith(":SecretProviderClass")]
    assert classes
    missing = []
    for urn in classes:
        namespace = resources[urn]["inputs"]["metadata"]["namespace"]
        makers = [
            u
            for u in closure(resources, urn)
            if (
                resources[u]["type"] == "kubernetes:core/v1:Namespace"
                and resources[u]["inputs"].get("metadata", {}).get("name") == namespace
            )
            or (
                resources[u]["type"] == RELEASE
                and resources[u]["inputs"].get("createNamespace")
                and resources[u]["inputs"].get("namespace") == namespace
            )
        ]
        if not makers:
            missing.append(f"{resources[urn]['name']} ({namespace})")
    assert missing == [], f"{stack}: created before their namespace: {missing}"


@pytest.mark.parametrize("stack", STACKS)
def test_every_release_on_system_nodes_reaches_the_system_node_group(recorded, stack):
    resources = recorded[stack]
    (system,) = [
        u
        for u, r in resources.items()
        if r["type"] == "aws:eks/nodeGroup:NodeGroup" and (r["inputs"].get("labels") or {}).get("node-role") == "system"
    ]
    on_system = [u for u, r in resources.items() if r["type"] == RELEASE and _selects_system(r["inputs"].get("values"))]
    names = {resources[u]["name"] for u in on_system}
    # The ones issue 17 named, and the controller's own.
    assert {"keda-release", "load-balancer-controller-chart", "monitoring-release"} <= names
    ahead = sorted(resources[u]["name"] for u in on_system if system not in closure(resources, u))
    assert ahead == [], f"{stack}: releases waiting on system nodes not ordered after {system}: {ahead}"


@pytest.mark.parametrize("stack", STACKS)
def test_envoy_gateway_whose_pods_select_no_nodes_reaches_an_untainted_node_group(recorded, stack):
    resources = recorded[stack]
    (gateway,) = [
        u
        for u, r in resources.items()
        if r["type"] == RELEASE and r["inputs"].get("chart") == edge_charts.ENVOY_GATEWAY.chart
    ]
    untainted = {
        u for u, r in resources.items() if r["type"] == "aws:eks/nodeGroup:NodeGroup" and not r["inputs"].get("taints")
    }
    assert untainted and untainted & closure(resources, gateway), f"{stack}: Envoy Gateway ahead of {untainted}"


@pytest.mark.parametrize("stack", STACKS)
def test_no_object_is_created_ahead_of_the_controller_webhooks_that_would_refuse_it(recorded, stack):
    resources = recorded[stack]
    (controller,) = [
        u
        for u, r in resources.items()
        if r["type"] == RELEASE and r["inputs"].get("chart") == edge_charts.LOAD_BALANCER_CONTROLLER.chart
    ]
    values = resources[controller]["inputs"]["values"]
    assert values.get("enableServiceMutatorWebhook") is False
    assert not resources[controller]["inputs"].get("skipAwait")
    intercepted = [
        u
        for u, r in resources.items()
        if r["type"]
        in ("kubernetes:networking.k8s.io/v1:Ingress", "kubernetes:elbv2.k8s.aws/v1beta1:IngressClassParams")
    ]
    assert intercepted
    ahead = sorted(resources[u]["name"] for u in intercepted if controller not in closure(resources, u))
    assert ahead == [], f"{stack}: refused until the controller is Ready: {ahead}"


@pytest.mark.parametrize("stack", STACKS)
def test_the_ordering_rules_pass_on_every_shipped_stack(stack_plan, stack):
    found = [
        v
        for v in stack_plan(stack).violations
        if v.policy.startswith(("custom-resources", "releases-after", "failing-webhooks"))
    ]
    assert found == []
