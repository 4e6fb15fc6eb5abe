"""nodes-imdsv2, nodes-ebs-encrypted, node-instance-types-allowed, accelerator-budget: passing and failing
fixtures, on launch templates, managed node groups and Karpenter objects."""

from __future__ import annotations

import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.compute.karpenter_node_pool import KarpenterNodePool, KarpenterNodePoolArgs
from inference_platform.components.compute.node_pool import NodePool, NodePoolArgs

ZONES = ("us-west-2a",)
SUBNETS = {"us-west-2a": "s-a", "us-west-2b": "s-b"}


def managed_pool(*types, max_size=2, zones=()):
    def program():
        NodePool(
            "pool",
            NodePoolArgs(cluster_name="c", name_prefix="c", kubernetes_version="1.36", node_role_arn="r",
                         pool=profile(PoolSpec(name="gpu", instance_types=types, max_size=max_size, zones=zones), ZONES),
                         subnet_ids_by_zone=SUBNETS, security_group_ids=["sg"]),
        )  # fmt: skip

    return program


def karpenter_pool(*types, max_size=2, zones=()):
    def program():
        KarpenterNodePool(
            "pool",
            KarpenterNodePoolArgs(pool=profile(PoolSpec(name="gpu", instance_types=types, max_size=max_size,
                                                        zones=zones), ZONES),
                                  cluster_name="c", node_role_name="n", cluster_security_group_id="sg",
                                  provider=k8s.Provider("k8s", kubeconfig="{}")),
        )  # fmt: skip

    return program


def test_our_pools_pass_imds_and_encryption(violations):
    for program in (managed_pool("g6.xlarge"), karpenter_pool("g6.xlarge")):
        assert violations(program, "nodes-imdsv2") == []
        assert violations(program, "nodes-ebs-encrypted") == []


def test_imdsv1_high_hop_limits_and_unencrypted_volumes_fail(violations):
    def program():
        aws.ec2.LaunchTemplate("default")  # AWS's defaults: IMDSv1 allowed
        aws.ec2.LaunchTemplate("hops", metadata_options={"http_tokens": "required", "http_put_response_hop_limit": 3})
        aws.ec2.LaunchTemplate(
            "plain", block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {"volume_size": 20}}]
        )
        k8s.apiextensions.CustomResource(
            "nc", api_version="karpenter.k8s.aws/v1", kind="EC2NodeClass", metadata={"name": "x"},
            spec={"metadataOptions": {"httpTokens": "optional"},
                  "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi"}}]},
        )  # fmt: skip

    imds = violations(program, "nodes-imdsv2")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in imds) == ["default", "hops", "nc", "plain"]
    assert any("hop limit 3" in v.message for v in imds)
    ebs = violations(program, "nodes-ebs-encrypted")
    assert sorted(v.urn.rsplit("::", 1)[1] for v in ebs) == ["nc", "plain"]


def test_instance_types_outside_the_allow_list_fail(violations):
    allowed = {"allowedInstanceTypes": ["g6.xlarge"]}
    assert violations(managed_pool("g6.xlarge"), "node-instance-types-allowed", allowed) == []
    assert violations(karpenter_pool("g6.xlarge"), "node-instance-types-allowed", allowed) == []
    (found,) = violations(managed_pool("g6.xlarge", "g6.2xlarge"), "node-instance-types-allowed", allowed)
    assert "g6.2xlarge" in found.message
    (found,) = violations(karpenter_pool("p5.48xlarge"), "node-instance-types-allowed", allowed)
    assert "p5.48xlarge" in found.message


def test_a_karpenter_pool_without_an_instance_type_requirement_fails_the_allow_list(violations):
    def program():
        k8s.apiextensions.CustomResource("open", api_version="karpenter.sh/v1", kind="NodePool", metadata={"name": "o"},
                                         spec={"template": {"spec": {"requirements": []}}})  # fmt: skip

    (found,) = violations(program, "node-instance-types-allowed", {"allowedInstanceTypes": ["g6.xlarge"]})
    assert "operator In" in found.message


def test_accelerators_over_budget_fail_and_within_pass(violations):
    def two_pools():
        managed_pool("p5.48xlarge", max_size=4)()  # 32 GPUs
        karpenter_pool("inf2.48xlarge", max_size=1)()  # 12 Neuron devices (limits)

    assert violations(two_pools, "accelerator-budget", {"maxAccelerators": 44}) == []
    (found,) = violations(two_pools, "accelerator-budget", {"maxAccelerators": 40})
    assert "44 accelerators" in found.message and "budget of 40" in found.message
    (unconfigured,) = violations(two_pools, "accelerator-budget")  # no budget configured: none allowed, and said
    assert "no policy configuration sets accelerator-budget.maxAccelerators" in unconfigured.message
    assert "budget of 0" not in unconfigured.message
    (zero,) = violations(two_pools, "accelerator-budget", {"maxAccelerators": 0})  # configured 0: a budget of 0
    assert "budget of 0" in zero.message


def test_an_efa_pool_counts_every_zone(violations):
    two_zones = ("us-west-2a", "us-west-2b")
    for program in (managed_pool("p5.48xlarge", zones=two_zones), karpenter_pool("p5.48xlarge", zones=two_zones)):
        assert violations(program, "accelerator-budget", {"maxAccelerators": 32}) == []  # 2 zones x 2 nodes x 8
        (found,) = violations(program, "accelerator-budget", {"maxAccelerators": 31})
        assert "32 accelerators" in found.message
        assert "us-west-2a" in found.message and "us-west-2b" in found.message  # one part per zone


def test_a_karpenter_gpu_pool_without_limits_is_unbounded(violations):
    def program():
        k8s.apiextensions.CustomResource(
            "nolimit", api_version="karpenter.sh/v1", kind="NodePool", metadata={"name": "n"},
            spec={"template": {"spec": {"requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}]}}},
        )  # fmt: skip

    (found,) = violations(program, "accelerator-budget", {"maxAccelerators": 1000})
    assert "unbounded" in found.message


# node-group-types-offered-in-zones: AWS's per-zone offerings (moto 5.2.5 ec2/resources/
# instance_type_offerings/availability-zone/us-east-2.json.gz: trn1.32xlarge only in us-east-2c).


def _group_in(zone, instance_type="trn1.32xlarge"):
    def program():
        subnet = aws.ec2.Subnet("s", vpc_id="vpc-1", cidr_block="10.0.0.0/24", availability_zone=zone)
        aws.eks.NodeGroup(
            "ng",
            cluster_name="c",
            node_role_arn="arn:aws:iam::123456789012:role/n",
            subnet_ids=[subnet.id],
            instance_types=[instance_type],
            scaling_config={"min_size": 0, "max_size": 1, "desired_size": 0},
        )

    return program


def test_a_node_group_in_a_zone_that_does_not_offer_its_type_is_refused(violations):
    (found,) = violations(_group_in("us-east-2a"), "node-group-types-offered-in-zones")
    assert "trn1.32xlarge is not offered in us-east-2a" in found.message and "us-east-2c (use2-az3)" in found.message
    assert violations(_group_in("us-east-2c"), "node-group-types-offered-in-zones") == []


def test_where_names_are_per_account_only_the_zone_count_is_judged(violations):
    # p5en is offered in two us-east-1 zone IDs: one named zone may be either of them in some account.
    assert violations(_group_in("us-east-1b", "p5en.48xlarge"), "node-group-types-offered-in-zones") == []
