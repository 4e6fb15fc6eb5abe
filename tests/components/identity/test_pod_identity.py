"""Pod Identity roles: trusted by pods.eks.amazonaws.com (with session tags), associated last."""

from __future__ import annotations

import json

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.identity.pod_identity import (
    PodIdentityRole,
    PodIdentityRoleArgs,
    pod_identity_trust_policy,
)
from tests.conftest import by_type, one

CLUSTER_ARN = "arn:aws:eks:us-west-2:123456789012:cluster/demo"


def test_trust_policy_is_the_pod_identity_service_with_tag_session_for_one_accounts_cluster():
    """EKS user guide, "Create IAM role with trust policy required by EKS Pod Identity" (awsdocs/amazon-eks-user-guide
    PR #1047, latest/ug/manage-access/aws-access/pod-id-role.adoc): the principal is pods.eks.amazonaws.com with
    sts:AssumeRole and sts:TagSession, and every AssumeRole carries the request tags eks-cluster-arn,
    eks-cluster-name, kubernetes-namespace, kubernetes-service-account, kubernetes-pod-name and kubernetes-pod-uid;
    the trust conditions on the account and those tags (confused deputy), never on aws:SourceArn, for which EKS
    documents no value (awslabs/mountpoint-s3-csi-driver #781: a SourceArn condition left pods without credentials)."""
    (statement,) = pod_identity_trust_policy(
        "123456789012", CLUSTER_ARN, namespace="inference", service_account="triton"
    )["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:SourceAccount": "123456789012",
            "aws:RequestTag/eks-cluster-arn": CLUSTER_ARN,
            "aws:RequestTag/kubernetes-namespace": "inference",
            "aws:RequestTag/kubernetes-service-account": "triton",
        }
    }
    assert "aws:SourceArn" not in json.dumps(statement)


def test_trust_for_any_cluster_of_the_account_matches_the_cluster_tag_by_pattern():
    any_cluster = "arn:aws:eks:us-west-2:123456789012:cluster/*"
    (statement,) = pod_identity_trust_policy("123456789012", any_cluster)["Statement"]
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"},
        "StringLike": {"aws:RequestTag/eks-cluster-arn": any_cluster},
    }


def test_role_policies_and_association_after_them(run_components):
    inline = json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}]})
    resources = run_components(
        lambda: PodIdentityRole(
            "reader",
            PodIdentityRoleArgs(
                cluster_name="demo",
                namespace="inference",
                service_account="triton",
                managed_policies=["AmazonEKS_CNI_Policy"],
                inline_policy=inline,
            ),
        )
    ).resources
    role = one(resources, "reader-role")
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    account = statement["Condition"]["StringEquals"]["aws:SourceAccount"]
    assert account.isdigit() and len(account) == 12
    conditions = statement["Condition"]["StringEquals"]
    assert conditions["aws:RequestTag/eks-cluster-arn"].endswith(f":{account}:cluster/demo")
    assert conditions["aws:RequestTag/kubernetes-namespace"] == "inference"
    assert conditions["aws:RequestTag/kubernetes-service-account"] == "triton"
    (attachment,) = by_type(resources, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attachment.inputs["policyArn"] == "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"
    assert one(resources, "reader-policy").inputs["policy"] == inline
    association = one(resources, "reader-association")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == ("inference", "triton")
    assert {attachment.urn, one(resources, "reader-policy").urn} <= set(association.dependencies)
    assert association.property_dependencies["roleArn"] == [role.urn]


def test_bad_names_are_refused():
    with pytest.raises(ComponentArgsError, match=r"namespace.*service_account"):
        PodIdentityRole("x", PodIdentityRoleArgs(cluster_name="c", namespace="Bad Name", service_account=""))
