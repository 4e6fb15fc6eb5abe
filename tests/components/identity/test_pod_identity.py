"""Pod Identity roles: trusted by pods.eks.amazonaws.com (with session tags), associated last."""

from __future__ import annotations

import json

import pytest

from components.common.errors import ComponentArgsError
from components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs, pod_identity_trust_policy
from tests.conftest import by_type, one

CLUSTER_ARN = "arn:aws:eks:us-west-2:123456789012:cluster/demo"


def test_trust_policy_is_the_pod_identity_service_with_tag_session_for_one_accounts_cluster():
    """EKS user guide, "Create IAM role with trust policy required by EKS Pod Identity": the principal is
    pods.eks.amazonaws.com with sts:AssumeRole and sts:TagSession; aws:SourceAccount/aws:SourceArn bound
    the service to this account and cluster (confused deputy)."""
    (statement,) = pod_identity_trust_policy("123456789012", CLUSTER_ARN)["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"},
        "ArnLike": {"aws:SourceArn": CLUSTER_ARN},
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
    assert statement["Condition"]["ArnLike"]["aws:SourceArn"].endswith(f":{account}:cluster/demo")
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
