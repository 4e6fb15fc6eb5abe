"""accelerator-budget counts every way to create accelerator capacity (issue 9 §6): Auto Scaling groups
(from mixed-instances overrides or their launch template), EC2 instances, fleets, and launch templates of
accelerated types no group uses, not only node groups and NodePools."""

from __future__ import annotations

import pulumi_aws as aws

BUDGET = {"maxAccelerators": 8}


def asg_from_template(name, instance_type, max_size):
    template = aws.ec2.LaunchTemplate(f"{name}-lt", instance_type=instance_type)
    aws.autoscaling.Group(name, max_size=max_size, min_size=0, vpc_zone_identifiers=["s"],
                          launch_template={"id": template.id, "version": "$Latest"})  # fmt: skip


def test_other_teams_capacity_within_budget_passes(violations):
    def program():
        asg_from_template("gpu", "g6.xlarge", 4)  # 4 x 1 L4
        aws.ec2.Instance("box", ami="ami-1", instance_type="g6.xlarge")  # 1
        aws.ec2.Instance("cpu", ami="ami-1", instance_type="m7i.large")  # 0
        aws.autoscaling.Group(
            "mixed",
            max_size=3,
            min_size=0,
            vpc_zone_identifiers=["s"],
            mixed_instances_policy={
                "launch_template": {
                    "launch_template_specification": {"launch_template_id": "lt-x"},
                    "overrides": [{"instance_type": "m7i.large"}, {"instance_type": "g6.xlarge"}],
                }
            },
        )  # 3

    assert violations(program, "accelerator-budget", BUDGET) == []


def test_auto_scaling_groups_instances_and_fleets_count_against_the_budget(violations):
    def program():
        asg_from_template("p5", "p5.48xlarge", 2)  # 16 H100

    (found,) = violations(program, "accelerator-budget", BUDGET)
    assert "16 accelerators" in found.message and "p5 16 (2 instances x 8)" in found.message

    def instances():
        for i in range(2):
            aws.ec2.Instance(f"g6e-{i}", ami="ami-1", instance_type="g6e.12xlarge")  # 4 each
        aws.ec2.Fleet("fleet", launch_template_configs=[{
            "launch_template_specification": {"launch_template_id": "lt-x", "version": "1"},
            "overrides": [{"instance_type": "g6.xlarge"}]}],
            target_capacity_specification={"default_target_capacity_type": "spot", "total_target_capacity": 2})  # fmt: skip

    (found,) = violations(instances, "accelerator-budget", BUDGET)
    assert "10 accelerators" in found.message and "fleet 2" in found.message


def test_uncountable_capacity_is_reported(violations):
    def program():
        aws.ec2.LaunchTemplate("orphan", instance_type="p5.48xlarge")
        aws.autoscaling.Group("foreign-template", max_size=2, min_size=0, vpc_zone_identifiers=["s"],
                              launch_template={"id": "lt-elsewhere", "version": "$Latest"})  # fmt: skip

    found = violations(program, "accelerator-budget", BUDGET)
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["foreign-template", "orphan"]


DEVELOPMENT = {"allowOnDemand": False}


def test_development_accelerators_must_be_spot(violations):
    def program():
        asg_from_template("on-demand-gpu", "g6.xlarge", 2)
        template = aws.ec2.LaunchTemplate("spot-lt", instance_type="g6.xlarge",
                                          instance_market_options={"market_type": "spot"})  # fmt: skip
        aws.autoscaling.Group("spot-gpu", max_size=2, min_size=0, vpc_zone_identifiers=["s"],
                              launch_template={"id": template.id, "version": "$Latest"})  # fmt: skip
        aws.ec2.Instance("gpu-box", ami="ami-1", instance_type="g6.xlarge")
        aws.ec2.Instance("spot-box", ami="ami-1", instance_type="g6.xlarge",
                         instance_market_options={"market_type": "spot"})  # fmt: skip
        aws.ec2.Instance("cpu-box", ami="ami-1", instance_type="m7i.large")
        aws.autoscaling.Group("mixed-spot", max_size=2, min_size=0, vpc_zone_identifiers=["s"], mixed_instances_policy={
            "instances_distribution": {"on_demand_base_capacity": 0, "on_demand_percentage_above_base_capacity": 0},
            "launch_template": {"launch_template_specification": {"launch_template_id": "lt-x"},
                                "overrides": [{"instance_type": "g6.xlarge"}]}})  # fmt: skip

    found = violations(program, "accelerators-spot-only", DEVELOPMENT)
    assert sorted(v.urn.rsplit("::", 1)[1] for v in found) == ["gpu-box", "on-demand-gpu"]
    # Production stacks (the default) may run on demand.
    assert violations(program, "accelerators-spot-only") == []
