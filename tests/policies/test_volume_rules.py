"""nodes-volumes-cmk: passing and failing fixtures."""

from __future__ import annotations

import pulumi_aws as aws
import pulumi_kubernetes as k8s

KEY = "arn:aws:kms:us-west-2:123456789012:key/k"


def _node_class(name, mappings):
    provider = k8s.Provider(f"{name}-k8s", kubeconfig="{}")
    spec = {"role": "nodes"} | ({"blockDeviceMappings": mappings} if mappings is not None else {})
    k8s.apiextensions.CustomResource(name, api_version="karpenter.k8s.aws/v1", kind="EC2NodeClass", spec=spec,
                                     opts=__import__("pulumi").ResourceOptions(provider=provider))  # fmt: skip


def test_volumes_on_the_stack_key_pass(violations):
    def good():
        aws.ec2.LaunchTemplate("lt", block_device_mappings=[
            {"device_name": "/dev/xvda", "ebs": {"encrypted": "true", "kms_key_id": KEY}}])  # fmt: skip
        aws.ec2.Instance("vm", ami="ami-1", instance_type="m7i.large", root_block_device={"encrypted": True,
                                                                                          "kms_key_id": KEY})  # fmt: skip
        _node_class("nc", [{"deviceName": "/dev/xvda", "ebs": {"encrypted": True, "kmsKeyID": KEY}}])

    assert violations(good, "nodes-volumes-cmk") == []


def test_default_key_volumes_fail(violations):
    def bad():
        aws.ec2.LaunchTemplate("lt", block_device_mappings=[{"device_name": "/dev/xvda", "ebs": {"encrypted": "true"}}])
        aws.ec2.LaunchTemplate("aws-key", block_device_mappings=[
            {"device_name": "/dev/xvda", "ebs": {"encrypted": "true", "kms_key_id": "alias/aws/ebs"}}])  # fmt: skip
        aws.ec2.Instance("vm", ami="ami-1", instance_type="m7i.large")
        aws.ec2.LaunchTemplate("ami-root", instance_type="m7i.large")
        aws.eks.NodeGroup("ng", cluster_name="c", node_role_arn="arn:aws:iam::1:role/n", subnet_ids=["s"],
                          scaling_config={"min_size": 0, "max_size": 1, "desired_size": 0})  # fmt: skip
        _node_class("nc", None)
        _node_class("nc-plain", [{"deviceName": "/dev/xvda", "ebs": {"encrypted": True}}])

    found = violations(bad, "nodes-volumes-cmk")
    assert sorted({v.urn.rsplit("::", 1)[1] for v in found}) == [
        "ami-root",
        "aws-key",
        "lt",
        "nc",
        "nc-plain",
        "ng",
        "vm",
    ]
    assert all("default key" in v.message for v in found)
