"""Model access roles: Pod Identity trust, prefix-scoped read-only and read-write grants, bindings
after the grants, and no wildcard anywhere."""

from __future__ import annotations

import json

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.storage.documents import model_access_policy
from inference_platform.components.storage.model_access import ModelAccess, ModelAccessArgs, ServiceAccount
from inference_platform.policies.rules.storage import broad_storage_grants
from tests.conftest import by_type, one

BUCKET = "arn:aws:s3:::models-bucket"
KEY = "arn:aws:kms:us-west-2:123456789012:key/k"
READER = ServiceAccount("inference", "triton")
WRITER = ServiceAccount("model-sync", "model-sync")


def access_args(**overrides) -> ModelAccessArgs:
    values = dict(bucket_arn=BUCKET, model_prefix="models/", kms_key_arn=KEY, region="us-west-2")
    values.update(overrides)
    return ModelAccessArgs(**values)


def test_the_reader_gets_objects_and_listing_under_the_prefix_and_decrypt_through_s3_only():
    statements = {
        s["Sid"]: s for s in model_access_policy(BUCKET, "models/", KEY, "us-west-2", write=False)["Statement"]
    }
    assert statements["ModelObjects"] == {
        "Sid": "ModelObjects",
        "Effect": "Allow",
        "Action": ["s3:GetObject"],
        "Resource": f"{BUCKET}/models/*",
    }
    assert statements["ListModelPrefix"]["Resource"] == BUCKET
    assert statements["ListModelPrefix"]["Condition"] == {"StringLike": {"s3:prefix": ["models/", "models/*"]}}
    kms = statements["StorageKeyThroughS3"]
    assert kms["Action"] == ["kms:Decrypt"] and kms["Resource"] == KEY
    assert kms["Condition"] == {"StringEquals": {"kms:ViaService": "s3.us-west-2.amazonaws.com"}}


def test_the_writer_uploads_under_the_prefix_but_never_deletes_versions_or_touches_the_bucket():
    statements = {
        s["Sid"]: s for s in model_access_policy(BUCKET, "models/", KEY, "us-west-2", write=True)["Statement"]
    }
    actions = set(statements["ModelObjects"]["Action"])
    assert {"s3:PutObject", "s3:GetObject", "s3:AbortMultipartUpload"} <= actions
    assert not {a for a in actions if "Version" in a or a.startswith("s3:PutBucket") or a.endswith("*")}
    assert statements["ModelObjects"]["Resource"] == f"{BUCKET}/models/*"
    assert statements["StorageKeyThroughS3"]["Action"] == ["kms:Decrypt", "kms:GenerateDataKey"]


@pytest.mark.parametrize("write", [False, True])
def test_no_grant_is_a_wildcard(write):
    assert list(broad_storage_grants(model_access_policy(BUCKET, "models/", KEY, "us-east-1", write=write))) == []


def test_roles_trust_pod_identity_and_bind_each_service_account_after_its_grant(run_components):
    def program():
        ModelAccess("access", access_args(cluster_name="demo", readers=[READER], writers=[WRITER]))

    resources = run_components(program).resources
    roles = {r.name: r for r in by_type(resources, "aws:iam/role:Role")}
    assert set(roles) == {"access-reader", "access-writer"}
    for r in roles.values():
        (statement,) = json.loads(r.inputs["assumeRolePolicy"])["Statement"]
        assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
        assert statement["Condition"]["StringEquals"]["aws:RequestTag/eks-cluster-arn"].endswith(":cluster/demo")
    reader_policy = json.loads(one(resources, "access-reader-models").inputs["policy"])
    assert reader_policy == model_access_policy(BUCKET, "models/", KEY, "us-west-2", write=False)
    bindings = {r.name: r for r in by_type(resources, "aws:eks/podIdentityAssociation:PodIdentityAssociation")}
    reader = bindings["access-reader-inference-triton"]
    assert (reader.inputs["namespace"], reader.inputs["serviceAccount"], reader.inputs["clusterName"]) == (
        "inference",
        "triton",
        "demo",
    )
    assert reader.property_dependencies["roleArn"] == [roles["access-reader"].urn]
    assert one(resources, "access-reader-models").urn in reader.dependencies
    assert bindings["access-writer-model-sync-model-sync"].property_dependencies["roleArn"] == [
        roles["access-writer"].urn
    ]


def test_without_a_cluster_only_the_roles_exist(run_components):
    resources = run_components(lambda: ModelAccess("access", access_args())).resources
    assert by_type(resources, "aws:eks/podIdentityAssociation:PodIdentityAssociation") == []
    assert len(by_type(resources, "aws:iam/rolePolicy:RolePolicy")) == 2


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        ModelAccess(
            "access",
            access_args(model_prefix="/models", readers=[READER, READER], writers=[ServiceAccount("Bad_NS", "x")]),
        )
    text = str(err.value)
    for expected in (
        "model_prefix='/models'",
        "bound twice: inference-triton",
        "'Bad_NS' is not a DNS label",
        "without cluster_name",
    ):
        assert expected in text
