"""Replacing a pool and tearing down the edge, through the replacement model (tests/infra/replacement_model.py):
prod is planned once as it ships and once per replace-forcing pool field changed in its stack file; every
resource the change replaces must be able to be replaced (a new physical name, or delete-before-replace)
and its dependents stay ordered after it. Component-level runs cover what a stack file cannot change
without changing URNs (the name prefix) and the reserved-capacity case no shipped stack has."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.compute.node_pool import NodePool, NodePoolArgs
from inference_platform.offline_plan.engine import run_program
from inference_platform.offline_plan.recorder import RecordedResource
from tests.conftest import REPO, by_type, one
from tests.infra import replacement_model as model

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
POOLS = "inference-platform:nodePools"


def plan_prod(tmp_path: Path, change=None):
    """prod's resources, with ``change(config)`` applied to a copy of its stack file's config."""
    stack = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    if change is not None:
        change(stack["config"])
    path = tmp_path / f"Pulumi.prod.{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(stack))
    return run_program(REPO, "prod", stack_file=path).resources


@pytest.fixture(scope="module")
def prod_base(tmp_path_factory):
    return plan_prod(tmp_path_factory.mktemp("prod-base"))


def small_models(change):
    def apply(config):
        change(config[POOLS]["small-models"])

    return apply


def system_group(change):
    def apply(config):
        change(config.setdefault("inference-platform:cluster", {}).setdefault("systemNodeGroup", {}))

    return apply


def zones(pool):
    # prod's network spans three zones; the pool moves from all of them to one.
    pool["availabilityZones"] = ["us-east-1c"]


# One change per replace-forcing input of aws_eks_node_group the stack file reaches, and what it forces.
CHANGES = {
    "instanceTypes": (small_models(lambda p: p.update(instanceTypes=["g6e.2xlarge"])), {"instanceTypes"}),
    "capacityType": (small_models(lambda p: p.update(capacityTypes=["spot"])), {"capacityType"}),
    "amiType": (small_models(lambda p: p.update(amiFamily="bottlerocket")), {"amiType"}),
    "subnetIds": (small_models(zones), {"subnetIds"}),
    "system instanceTypes": (system_group(lambda g: g.update(instanceTypes=["m7i.2xlarge"])), {"instanceTypes"}),
}


def test_planning_twice_replaces_nothing(tmp_path, prod_base):
    again = plan_prod(tmp_path)
    assert model.replacements(prod_base, again) == []
    assert model.changed(prod_base, again) == set()


@pytest.mark.parametrize("field", CHANGES)
def test_each_replace_forcing_pool_field_can_be_replaced(tmp_path, prod_base, field):
    change, forced = CHANGES[field]
    after = plan_prod(tmp_path, change)
    replaced = model.replacements(prod_base, after)
    groups = [r for r in replaced if r.type == NODE_GROUP]
    assert groups, f"{field}: no node group replaced"
    assert all(forced <= set(r.fields) for r in groups), [(r.urn, r.fields) for r in groups]
    assert [r for r in replaced if r.collides] == [], f"{field}: create-before-delete under the same name"
    by_urn = {r.urn: r for r in after}
    for r in groups:
        # The new group gets a new name, so the old one serves until the new one is ACTIVE.
        assert not r.delete_before_replace and r.new_name != r.old_name
        # Its dependents are ordered after it (re-pointed at the new group before the old goes).
        group = by_urn[r.urn]
        tags = [t for t in by_type(after, ASG_TAG) if t.parent == group.parent]
        assert tags and all(group.urn in model.direct_dependencies(t) for t in tags)
        assert by_urn[r.urn].property_dependencies["launchTemplate"]


def test_disk_size_updates_the_launch_template_and_replaces_no_group(tmp_path, prod_base):
    """disk_size is ForceNew on the node group, but the pools size disks in their launch templates
    (a new template version: a rolling update of the group)."""
    after = plan_prod(tmp_path, small_models(lambda p: p.update(diskSizeGib=300)))
    assert model.replacements(prod_base, after) == []
    kinds = {next(r for r in after if r.urn == u).type for u in model.changed(prod_base, after)}
    assert LAUNCH_TEMPLATE in kinds and NODE_GROUP not in kinds


def pool_run(run_components, *, prefix="demo", types=("p5.48xlarge",), **spec):
    zones = ("us-west-2a", "us-west-2b")
    pool = profile(PoolSpec(name="gpu", instance_types=types, max_size=2, zones=zones, **spec), zones)
    args = NodePoolArgs(
        cluster_name="demo",
        name_prefix=prefix,
        kubernetes_version="1.36",
        node_role_arn="arn:aws:iam::123456789012:role/nodes",
        pool=pool,
        subnet_ids_by_zone={"us-west-2a": "subnet-a", "us-west-2b": "subnet-b"},
        security_group_ids=["sg-cluster", "sg-nodes"],
        autoscaler_cluster_name="demo",
    )
    return run_components(lambda: NodePool("pool", args)).resources


def test_a_new_name_prefix_replaces_template_placement_group_and_group_under_new_names(run_components):
    """node_group_name and launch_template.id (and the placement group's name) change together."""
    old, new = pool_run(run_components, prefix="demo"), pool_run(run_components, prefix="demo2")
    replaced = model.replacements(old, new)
    # The ASG tags follow their group's new Auto Scaling group (a new identity, so no collision either).
    assert {r.type for r in replaced} == {NODE_GROUP, LAUNCH_TEMPLATE, PLACEMENT_GROUP, ASG_TAG}
    assert [r for r in replaced if r.collides] == []
    # Created placement group -> template -> group, deleted the other way round.
    closure = model.dependency_closure(new)
    for zone in ("us-west-2a", "us-west-2b"):
        group, lt, pg = (one(new, f"pool-{zone}-{k}").urn for k in ("ng", "lt", "placement"))
        assert model.deleted_before(closure, group, lt) and model.deleted_before(closure, lt, pg)


def test_a_reserved_pool_is_replaced_delete_before_replace_under_its_plain_name(run_components):
    """Its reservation cannot hold the new group's nodes next to the old group's."""
    reserved = {"capacity_types": ("reservation",), "reservation_ids": ("cr-0123456789abcdef0",)}
    old = pool_run(run_components, types=("p5.48xlarge",), **reserved)
    new = pool_run(run_components, types=("p5en.48xlarge",), **reserved)
    groups = [r for r in model.replacements(old, new) if r.type == NODE_GROUP]
    assert groups and all(r.delete_before_replace and not r.collides for r in groups)
    assert {r.new_name for r in groups} == {"demo-gpu-a", "demo-gpu-b"}


def test_elastic_groups_are_named_by_their_replace_forcing_inputs(run_components):
    resources = pool_run(run_components, types=("g6e.xlarge",))
    (group,) = by_type(resources, NODE_GROUP)
    assert re.fullmatch(r"demo-gpu-[0-9a-f]{8}", group.inputs["nodeGroupName"])
    assert not group.delete_before_replace


def test_the_pinned_force_new_fields_cover_what_the_node_pools_set():
    """Every ForceNew input of the three types that the pools set is in the digest or the name."""
    node_group = model.facts()["forceNew"][NODE_GROUP]["fields"]
    assert {"instanceTypes", "capacityType", "amiType", "subnetIds", "nodeRoleArn", "launchTemplate.id"} <= set(
        node_group
    )
    assert model.facts()["forceNew"][LAUNCH_TEMPLATE]["fields"] == ["name", "namePrefix"]


# --- The edge on delete -------------------------------------------------------------------------------

INGRESS = "kubernetes:networking.k8s.io/v1:Ingress"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_ingresses_are_deleted_first_and_awaited(stack_plan, stack):
    """On destroy, or when edge.domain goes, each Ingress is deleted (and waited for: the controller
    deletes the ALB and releases the finalizer) before what the controller needs to do so, and before
    the AWS resources the ALB holds on to."""
    resources = stack_plan(stack).run.resources
    closure = model.dependency_closure(resources)
    ingresses = by_type(resources, INGRESS)
    assert [i.name for i in ingresses] == ["public-endpoint-http"]  # the gRPC one went with KServe at the edge
    outlive = {
        "IngressClass": one(resources, "public-endpoint-class").urn,
        "IngressClassParams": one(resources, "public-endpoint-class-params").urn,
        "controller release": one(resources, "load-balancer-controller-chart").urn,
        "load-balancer security group": next(
            r.urn
            for r in resources
            if r.type == "aws:ec2/securityGroup:SecurityGroup" and r.name == "security-groups-lb"
        ),
        "WAF ACL": one(resources, "public-endpoint-waf").urn,
    }
    for ingress in ingresses:
        annotations = ingress.inputs["metadata"]["annotations"]
        assert model.delete_awaited(ingress), f"{ingress.name}: its delete is not awaited"
        assert "pulumi.com/skipAwait" not in annotations
        assert annotations["pulumi.com/waitFor"] == "jsonpath={.status.loadBalancer.ingress[0].hostname}"
        for what, urn in outlive.items():
            assert model.deleted_before(closure, ingress.urn, urn), f"{ingress.name} is not deleted before the {what}"
        # Directly, not only through the component's nesting.
        for what in ("IngressClass", "IngressClassParams", "controller release"):
            assert outlive[what] in ingress.dependencies, f"{ingress.name} does not depend on the {what} itself"
    # While the Ingresses go, the controller runs: its pods keep their system nodes and its AWS credentials.
    controller = outlive["controller release"]
    for what, name in (
        ("system node group", "pool-system-ng"),
        ("Pod Identity association", "load-balancer-controller-controller-association"),
        ("controller role policy", "load-balancer-controller-controller-policy"),
    ):
        assert model.deleted_before(closure, controller, one(resources, name).urn), f"the {what} goes first"


def test_the_delete_await_model_follows_the_pinned_legacy_kinds():
    legacy = model.facts()["pulumiKubernetes"]["skipAwaitAlsoSkipsDeleteFor"]
    assert "networking.k8s.io/v1/Ingress" not in legacy and "apps/v1/Deployment" in legacy
    skipped = RecordedResource(
        urn="u", type="kubernetes:apps/v1:Deployment", name="d", parent=None, custom=True,
        inputs={"metadata": {"annotations": {"pulumi.com/skipAwait": "true"}}},
    )  # fmt: skip
    assert not model.delete_awaited(skipped)
    ingress = copy.deepcopy(skipped)
    ingress.type = INGRESS
    assert model.delete_awaited(ingress)


def _alb_deletion_protection(resources) -> str:
    spec = one(resources, "public-endpoint-class-params").inputs["spec"]
    return {a["key"]: a["value"] for a in spec["loadBalancerAttributes"]}["deletion_protection.enabled"]


def test_alb_deletion_protection_is_a_setting_turned_off_in_place(tmp_path, prod_base, stack_plan):
    """prod protects its ALB by default; edge.deletionProtection false (the first step of a destroy) is an
    in-place change of the class params, which the controller applies to the ALB."""
    assert _alb_deletion_protection(prod_base) == "true"
    assert _alb_deletion_protection(stack_plan("dev").run.resources) == "false"
    after = plan_prod(tmp_path, lambda c: c["inference-platform:edge"].update(deletionProtection=False))
    assert _alb_deletion_protection(after) == "false"
    assert model.replacements(prod_base, after) == []
    changed = {next(r for r in after if r.urn == u).name for u in model.changed(prod_base, after)}
    # Only the edge is checked: the verification Job and its settings also change with the stack file.
    assert {n for n in changed if n.startswith("public-endpoint")} == {"public-endpoint-class-params"}
