"""cost-monthly-budget, cost-dev-on-demand-accelerators, cost-nat-per-zone-production-only,
cost-dev-accelerator-pools-scale-to-zero: a passing and a failing fixture each, and the shipped stacks."""

from __future__ import annotations

import pulumi_aws as aws
import pytest

from inferctl.plan.command import _policy_config
from inferctl.plan.policy_runner import evaluate
from policies.pack import POLICIES

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
    found = evaluate(stack_plan(stack).run.resources, cost, config=_policy_config(None, stack))
    assert found == [], [v.message for v in found]
