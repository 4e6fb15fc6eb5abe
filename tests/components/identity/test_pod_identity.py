"""Pod Identity roles: trusted by pods.eks.amazonaws.com (with session tags), associated last."""

from __future__ import annotations

import json

import pytest

from components.common.errors import ComponentArgsError
from components.identity.pod_identity import PodIdentityRole, PodIdentityRoleArgs, pod_identity_trust_policy
from tests.conftest import by_type, one


def test_trust_policy_is_the_pod_identity_service_with_tag_session():
    (statement,) = pod_identity_trust_policy()["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]


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
    assert json.loads(role.inputs["assumeRolePolicy"]) == pod_identity_trust_policy()
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
