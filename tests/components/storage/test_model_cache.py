"""Model cache: PERSISTENT_2 Lustre under the storage key, linked to the model prefix with auto-import,
Lustre ports open between the nodes and the file system only, the key granted to FSx's S3 role."""

from __future__ import annotations

import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.storage.model_cache import ModelCache, ModelCacheArgs
from tests.conftest import by_type, one

KEY = "arn:aws:kms:us-west-2:123456789012:key/storage"
LOGS_KEY = "arn:aws:kms:us-west-2:123456789012:key/logs"
NODE_SG = "sg-nodes"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


def cache_args(**overrides) -> ModelCacheArgs:
    values = dict(
        name_prefix="demo-prod",
        account_id="123456789012",
        vpc_id="vpc-1",
        subnet_id="subnet-a",
        node_security_group_id=NODE_SG,
        kms_key_arn=KEY,
        log_kms_key_arn=LOGS_KEY,
        bucket_name="models-bucket",
        bucket_arn="arn:aws:s3:::models-bucket",
        model_prefix="models/",
    )
    values.update(overrides)
    return ModelCacheArgs(**values)


@pytest.fixture
def cache(run_components):
    return run_components(lambda: ModelCache("cache", cache_args(protect=True))).resources


def test_file_system_is_persistent_2_encrypted_in_one_private_subnet(cache):
    fs = one(cache, "cache-fs")
    inputs = fs.inputs
    assert (inputs["deploymentType"], inputs["storageType"], inputs["fileSystemTypeVersion"]) == (
        "PERSISTENT_2",
        "SSD",
        "2.15",
    )
    assert inputs["storageCapacity"] == 1200 and inputs["perUnitStorageThroughput"] == 250
    assert inputs["kmsKeyId"] == KEY and inputs["subnetIds"] == "subnet-a"
    assert fs.property_dependencies["securityGroupIds"] == [one(cache, "cache-sg").urn]
    assert inputs["logConfiguration"]["level"] == "WARN_ERROR"
    assert fs.property_dependencies["logConfiguration"] == [one(cache, "cache-logs").urn]
    assert fs.protect and fs.retain_on_delete


def test_event_logs_go_to_an_fsx_log_group_under_the_logs_key(cache):
    group = one(cache, "cache-logs").inputs
    assert group["name"].startswith("/aws/fsx/") and group["kmsKeyId"] == LOGS_KEY


def test_the_link_imports_new_and_changed_objects_of_the_model_prefix_and_exports_nothing(cache):
    link = one(cache, "cache-link")
    assert link.inputs["dataRepositoryPath"] == "s3://models-bucket/models/"
    assert link.inputs["fileSystemPath"] == "/models"
    assert link.inputs["s3"] == {"autoImportPolicy": {"events": ["NEW", "CHANGED"]}}
    assert link.inputs["batchImportMetaDataOnCreate"] is True and link.inputs["deleteDataInFilesystem"] is False
    assert link.property_dependencies["fileSystemId"] == [one(cache, "cache-fs").urn]


def test_fsx_s3_role_gets_decrypt_on_this_buckets_objects_only_after_the_link(cache):
    grant = one(cache, "cache-s3-import")
    fs_id = one(cache, "cache-fs").id
    assert grant.inputs["granteePrincipal"] == (
        "arn:aws:iam::123456789012:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
        f"AWSServiceRoleForFSxS3Access_{fs_id}"
    )
    assert grant.inputs["operations"] == ["Decrypt"] and grant.inputs["keyId"] == KEY
    assert grant.inputs["constraints"] == [{"encryptionContextSubset": {"aws:s3:arn": "arn:aws:s3:::models-bucket"}}]
    assert one(cache, "cache-link").urn in grant.dependencies


def _ports(rule):
    return int(rule.inputs["fromPort"]), int(rule.inputs["toPort"])


def test_lustre_ports_are_open_only_between_the_nodes_and_the_file_system(cache):
    sg = one(cache, "cache-sg").urn
    fsx_rules = [r for r in by_type(cache, INGRESS) + by_type(cache, EGRESS) if r.inputs["securityGroupId"] != NODE_SG]
    assert len(fsx_rules) == 8
    for rule in fsx_rules:
        assert rule.property_dependencies["securityGroupId"] == [sg]
        assert "cidrIpv4" not in rule.inputs and "cidrIpv6" not in rule.inputs
        assert rule.inputs["ipProtocol"] == "tcp" and _ports(rule) in {(988, 988), (1018, 1023)}
        source = rule.inputs.get("referencedSecurityGroupId")
        assert source == NODE_SG or rule.property_dependencies["referencedSecurityGroupId"] == [sg]
    ingress_from_nodes = {
        _ports(r) for r in by_type(cache, INGRESS) if r.inputs.get("referencedSecurityGroupId") == NODE_SG
    }
    assert ingress_from_nodes == {(988, 988), (1018, 1023)}


def test_the_nodes_admit_lustre_replies_from_the_file_system_only(cache):
    node_rules = [r for r in by_type(cache, INGRESS) if r.inputs["securityGroupId"] == NODE_SG]
    assert {_ports(r) for r in node_rules} == {(988, 988), (1018, 1023)}
    assert all(r.property_dependencies["referencedSecurityGroupId"] == [one(cache, "cache-sg").urn] for r in node_rules)


def test_unprotected_caches_are_not_protected(run_components):
    fs = one(run_components(lambda: ModelCache("cache", cache_args())).resources, "cache-fs")
    assert not fs.protect and not fs.retain_on_delete


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        ModelCache(
            "cache",
            cache_args(
                per_unit_storage_throughput=200,
                storage_capacity_gib=2000,
                file_system_path="models/",
                auto_import_events=["NEW", "NEW", "MOVED"],
                model_prefix="models",
            ),
        )
    text = str(err.value)
    for expected in (
        "got 200; PERSISTENT_2 offers 125, 250, 500, 1000",
        "got 2000",
        "file_system_path='models/'",
        "auto_import_events",
        "model_prefix='models'",
    ):
        assert expected in text
