"""Node volumes on the stack's CMK (issue 9 §4): the managed groups' launch templates and Karpenter's
EC2NodeClasses name the key, and whoever launches the instances may use it (Auto Scaling's
service-linked role through the key policy, the Karpenter controller through its own policy)."""

from __future__ import annotations

import pulumi_kubernetes as k8s

from inference_platform.catalog.pool_profile import PoolSpec, profile
from inference_platform.components.compute.iam_policies import karpenter_controller_policy
from inference_platform.components.compute.karpenter_node_pool import KarpenterNodePool, KarpenterNodePoolArgs
from inference_platform.components.compute.node_pool import NodePool, NodePoolArgs
from inference_platform.components.keys.kms import KeysArgs, autoscaling_service_role_arn, key_policy
from tests.conftest import one

KEY = "arn:aws:kms:us-west-2:123456789012:key/volumes"
ZONES = ("us-west-2a", "us-west-2b")


def test_launch_template_volumes_name_the_key(run_components):
    pool = profile(PoolSpec(name="gpu", instance_types=("g6.xlarge",), ami_family="bottlerocket"), ZONES)
    args = NodePoolArgs(cluster_name="demo", name_prefix="demo", kubernetes_version="1.36",
                        node_role_arn="arn:aws:iam::123456789012:role/nodes", pool=pool,
                        subnet_ids_by_zone={z: f"subnet-{z}" for z in ZONES}, security_group_ids=["sg"],
                        volume_kms_key_arn=KEY)  # fmt: skip
    lt = one(run_components(lambda: NodePool("pool", args)).resources, "pool-lt").inputs
    assert [m["ebs"]["kmsKeyId"] for m in lt["blockDeviceMappings"]] == [KEY, KEY]


def test_node_class_root_volume_names_the_key(run_components):
    pool = profile(PoolSpec(name="gpu", instance_types=("g6.xlarge",)), ZONES)

    def program():
        provider = k8s.Provider("k8s", kubeconfig="{}")
        KarpenterNodePool("pool", KarpenterNodePoolArgs(pool=pool, cluster_name="demo", node_role_name="nodes",
                                                        cluster_security_group_id="sg", provider=provider,
                                                        volume_kms_key_arn=KEY))  # fmt: skip

    node_class = one(run_components(program).resources, "pool-nodeclass").inputs
    assert node_class["spec"]["blockDeviceMappings"][0]["ebs"]["kmsKeyID"] == KEY


def test_storage_key_policy_lets_auto_scaling_launch_encrypted_volumes():
    role = autoscaling_service_role_arn("aws", "123456789012")
    assert role.endswith(":role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling")
    args = KeysArgs(alias_prefix="p", account_id="123456789012", region="us-west-2", volume_service_role_arns=[role])
    statements = {s["Sid"]: s for s in key_policy("storage", args)["Statement"]}
    use, grant = statements["AllowServiceLinkedRoleUseForVolumes"], statements["AllowServiceLinkedRoleGrantsForVolumes"]
    assert use["Principal"] == grant["Principal"] == {"AWS": [role]}
    assert {"kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"} == set(
        use["Action"]
    )
    assert grant["Action"] == "kms:CreateGrant"
    assert grant["Condition"] == {"Bool": {"kms:GrantIsForAWSResource": "true"}}
    # Only the storage key: the role has no business with cluster secrets or logs.
    for purpose in ("cluster", "logs"):
        assert "AllowServiceLinkedRoleUseForVolumes" not in str(key_policy(purpose, args))


def test_karpenter_controller_may_have_ec2_use_the_volume_key_and_nothing_else():
    common = dict(cluster_name="demo", partition="aws", region="us-west-2", account_id="123456789012",
                  node_role_arn="arn:aws:iam::123456789012:role/nodes", queue_arn="arn:aws:sqs:us-west-2:1:q")  # fmt: skip
    assert "kms:" not in str(karpenter_controller_policy(**common))
    statements = [s for s in karpenter_controller_policy(**common, volume_key_arn=KEY)["Statement"]
                  if "Volume" in s["Sid"]]  # fmt: skip
    assert {s["Resource"] for s in statements} == {KEY}
    assert all(s["Condition"]["StringEquals"] == {"kms:ViaService": "ec2.us-west-2.amazonaws.com"} for s in statements)
    grant = next(s for s in statements if s["Action"] == "kms:CreateGrant")
    assert grant["Condition"]["Bool"] == {"kms:GrantIsForAWSResource": "true"}


def test_a_new_account_gets_the_auto_scaling_role_before_the_keys(run_components):
    from inference_platform.components.keys.kms import Keys

    def program(create):
        def build():
            Keys("keys", KeysArgs(alias_prefix="p", account_id="123456789012", region="us-west-2",
                                  create_autoscaling_service_role=create))  # fmt: skip

        return build

    assert not [r for r in run_components(program(False)).resources if r.type.endswith("ServiceLinkedRole")]
    resources = run_components(program(True)).resources
    role = one(resources, "keys-autoscaling-service-role")
    assert role.inputs["awsServiceName"] == "autoscaling.amazonaws.com" and role.retain_on_delete
    assert all(role.urn in one(resources, f"keys-{p}").dependencies for p in ("cluster", "storage", "logs"))


def test_storage_key_policy_admits_the_spot_role_beside_auto_scaling():
    """Spot launches go through AWSServiceRoleForEC2Spot, which must be admitted to the key of the
    CMK-encrypted root volume or the instance terminates at launch (aws/karpenter-provider-aws #933, #1407)."""
    from inference_platform.components.keys.kms import spot_service_role_arn

    spot = spot_service_role_arn("aws", "123456789012")
    assert spot == "arn:aws:iam::123456789012:role/aws-service-role/spot.amazonaws.com/AWSServiceRoleForEC2Spot"
    roles = [autoscaling_service_role_arn("aws", "123456789012"), spot]
    args = KeysArgs(alias_prefix="p", account_id="123456789012", region="us-west-2", volume_service_role_arns=roles)
    statements = {s["Sid"]: s for s in key_policy("storage", args)["Statement"]}
    for sid in ("AllowServiceLinkedRoleUseForVolumes", "AllowServiceLinkedRoleGrantsForVolumes"):
        assert spot in statements[sid]["Principal"]["AWS"]


def test_a_new_account_gets_the_spot_role_before_the_keys_only_when_asked(run_components):
    from inference_platform.components.keys.kms import Keys

    def program(create):
        def build():
            Keys("keys", KeysArgs(alias_prefix="p", account_id="123456789012", region="us-west-2",
                                  create_spot_service_role=create))  # fmt: skip

        return build

    assert not [r for r in run_components(program(False)).resources if r.type.endswith("ServiceLinkedRole")]
    resources = run_components(program(True)).resources
    role = one(resources, "keys-spot-service-role")
    assert role.inputs["awsServiceName"] == "spot.amazonaws.com" and role.retain_on_delete
    assert all(role.urn in one(resources, f"keys-{p}").dependencies for p in ("cluster", "storage", "logs"))
