"""cost-monthly-budget, cost-dev-on-demand-accelerators, cost-nat-per-zone-production-only,
cost-dev-accelerator-pools-scale-to-zero: a passing and a failing fixture each, and the shipped stacks."""

from __future__ import annotations

import pulumi_aws as aws
import pytest

from inference_platform.offline_plan.policy_runner import evaluate
from inference_platform.policies.pack import POLICIES

DEV = {"environment": "development", "region": "us-east-1"}
PROD = {"environment": "production", "region": "us-east-1"}


def gpu_pool(min_size=0, max_size=2, capacity="SPOT", types=("g6.xlarge",)):
    def program():
        lt = aws.ec2.LaunchTemplate(
            "lt", block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {"volume_size": 100, "encrypted": "true"}}]
        )
        aws.eks.NodeGroup("ng", cluster_name="c", node_role_arn="r", subnet_ids=["s"], instance_types=list(types),
                          capacity_type=capacity, labels={"node-pool": "gpu"},
                          launch_template={"id": lt.id, "version": "1"},
                          scaling_config={"min_size": min_size, "desired_size": min_size, "max_size": max_size})  # fmt: skip

    return program


def nat_gateways(count):
    def program():
        for i in range(count):
            aws.ec2.NatGateway(f"nat-{i}", subnet_id=f"s-{i}", allocation_id=f"e-{i}")

    return program


def test_budget_passes_within_and_fails_over_naming_the_total(violations):
    program = gpu_pool(min_size=1, max_size=2, capacity="ON_DEMAND", types=("p5.48xlarge",))
    assert violations(program, "cost-monthly-budget", {"monthlyBudgetUsd": 50_000, "region": "us-east-1"}) == []
    (v,) = violations(program, "cost-monthly-budget", {"monthlyBudgetUsd": 10_000, "region": "us-east-1"})
    assert "$40,187" in v.message and "budget of $10,000" in v.message and "EC2 accelerators" in v.message


def test_budget_without_a_priced_region_is_a_violation(violations):
    (v,) = violations(gpu_pool(), "cost-monthly-budget", {"monthlyBudgetUsd": 10, "region": "eu-central-1"})
    assert "eu-central-1" in v.message


def test_on_demand_accelerators_in_development_get_their_price(violations):
    assert violations(gpu_pool(capacity="SPOT"), "cost-dev-on-demand-accelerators", DEV) == []
    assert violations(gpu_pool(capacity="ON_DEMAND"), "cost-dev-on-demand-accelerators", PROD) == []
    (v,) = violations(gpu_pool(capacity="ON_DEMAND", max_size=2), "cost-dev-on-demand-accelerators", DEV)
    # 2 x g6.xlarge on demand: 2 x (0.8048 x 730 + 100 GiB x 0.08)
    assert "$1,191 a month on demand" in v.message and v.urn.endswith("::ng")


def test_nat_per_zone_only_in_production(violations):
    assert violations(nat_gateways(1), "cost-nat-per-zone-production-only", DEV) == []
    assert violations(nat_gateways(3), "cost-nat-per-zone-production-only", PROD) == []
    (v,) = violations(nat_gateways(3), "cost-nat-per-zone-production-only", DEV)
    assert "3 NAT gateways" in v.message and "$75 a month" in v.message


def test_development_accelerator_pools_scale_to_zero(violations):
    assert violations(gpu_pool(min_size=0), "cost-dev-accelerator-pools-scale-to-zero", DEV) == []
    assert violations(gpu_pool(min_size=1), "cost-dev-accelerator-pools-scale-to-zero", PROD) == []
    (v,) = violations(gpu_pool(min_size=1), "cost-dev-accelerator-pools-scale-to-zero", DEV)
    assert "floor costs" in v.message and "minSize to 0" in v.message


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_shipped_stacks_pass_their_cost_policies(stack, stack_plan):
    cost = [p for p in POLICIES if p.name.startswith("cost-")]
    found = evaluate(stack_plan(stack).run.resources, cost, config=stack_plan(stack).policy_config.values)
    assert found == [], [v.message for v in found]


def night_scheduled_gpus():
    """4 replicas x 8 H100s on a pool from 0 to 4 nodes, and the ScaledObject inference_platform.components.autoscaling renders
    (day 06:00-22:00 UTC at 4 replicas, night at 2)."""
    from inference_platform.components.autoscaling.scaled_object import ScaleTarget, ScalingPolicy, scaled_object_spec
    from inference_platform.components.observability.promql import Scope

    def program():
        import pulumi_kubernetes as k8s

        gpu_pool(min_size=0, max_size=4, capacity="ON_DEMAND", types=("p5.48xlarge",))()
        pool = {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "node-pool", "operator": "In", "values": ["gpu"]}]}]
        }
        k8s.apps.v1.Deployment("triton", metadata={"name": "triton", "namespace": "inference"}, spec={
            "replicas": 4, "selector": {"matchLabels": {"app": "t"}}, "template": {
                "metadata": {"labels": {"app": "t"}},
                "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": pool}},
                         "containers": [{"name": "t", "image": "i", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}})  # fmt: skip
        policy = ScalingPolicy(scope=Scope(namespace="inference", job="triton"), prometheus_url="http://p:9090",
                               min_replicas=4, max_replicas=4)  # fmt: skip
        k8s.apiextensions.CustomResource("so", api_version="keda.sh/v1alpha1", kind="ScaledObject",
                                         metadata={"name": "triton", "namespace": "inference"},
                                         spec=scaled_object_spec(policy, ScaleTarget(name="triton")))  # fmt: skip

    return program


def test_budget_prices_accelerators_with_the_plans_night_schedule(violations):
    # 16 h x 4 + 8 h x 2 nodes = 3.33 nodes on average: ~$134k a month, not the ~$161k of 4 nodes all day.
    budget = {"monthlyBudgetUsd": 140_000, "region": "us-east-1"}
    assert violations(night_scheduled_gpus(), "cost-monthly-budget", budget) == []
    (v,) = violations(night_scheduled_gpus(), "cost-monthly-budget", {**budget, "monthlyBudgetUsd": 130_000})
    assert "$133,957" in v.message


def test_bad_assumptions_are_reported_together_by_key(violations):
    bad = {"monthlyBudgetUsd": 1e9, "region": "us-east-1", "assumptions": {"nightHours": 8, "natGibPerGateway": "x"}}
    (v,) = violations(gpu_pool(), "cost-monthly-budget", bad)
    assert "assumptions.nightHours: unknown key" in v.message and "assumptions.natGibPerGateway: got 'x'" in v.message
    (v,) = violations(nat_gateways(2), "cost-nat-per-zone-production-only", {**DEV, "assumptions": {"albLcu": -1}})
    assert "assumptions.albLcu" in v.message


def test_the_config_schema_declares_every_assumption():
    from inference_platform.policies.rules.cost import POLICIES as COST

    for policy in COST:
        schema = policy.config_schema.properties["assumptions"]
        assert schema["additionalProperties"] is False and "s3ModelGib" in schema["properties"], policy.name


def test_components_are_not_priced_as_unknown(violations):
    import pulumi

    class Egress(pulumi.ComponentResource):
        def __init__(self, name):
            super().__init__("team:network:Egress", name, None, None)
            aws.ec2.NatGateway(f"{name}-nat", subnet_id="s", allocation_id="e",
                               opts=pulumi.ResourceOptions(parent=self))  # fmt: skip
            self.register_outputs({})

    (v,) = violations(lambda: Egress("egress"), "cost-monthly-budget", {"monthlyBudgetUsd": 1, "region": "us-east-1"})
    assert "0 resources of unknown cost" in v.message, v.message
