"""aws-physical-names (issue 17 §5): one table of AWS name limits; a passing and a failing fixture for each
kind of name (set, prefix, autoname, nested), and the table pinned against botocore's service models.

botocore 1.44.8 is the primary, versioned source: its ``data/<service>/<api-version>/service-2.json.gz``
shapes carry ``max``/``min``/``pattern``; where the table says ``shape X``, this test reads X from the
installed botocore and requires the table to agree, so a botocore upgrade that changes a limit fails here.
The version is the lock's (tests/locks.py): an installed botocore that differs is a broken install, and a lock
that moved past the version the table cites says which facts to re-read.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import botocore
import pulumi_aws as aws
import pytest

from inference_platform.catalog.names import fit_name
from inference_platform.policies.rules.names import BOTOCORE, NAME_RULES, PULUMI_AWS, RULES_BY_TYPE, NameRule
from tests.locks import moved_past, require_locked

POLICY = "aws-physical-names"
BOTOCORE_DATA = Path(botocore.__file__).parent / "data"


def _names(found):
    return sorted(v.urn.rsplit("::", 1)[1] for v in found)


def test_names_within_their_limits_pass(violations):
    def program():
        aws.eks.Cluster("c", name="inference-platform-dev", role_arn="arn", vpc_config={"subnet_ids": ["s"]})
        aws.elasticache.ReplicationGroup("rg", replication_group_id=fit_name("inference-platform-production-us-east-1-rl", 40),
                                         description="d")  # fmt: skip
        aws.iam.Role("r", name_prefix="x" * 38, assume_role_policy="{}")
        aws.s3.Bucket("b", bucket_prefix="inference-platform-dev-models-")
        aws.ecr.Repository("repo", name="inference-platform-dev/inference")
        aws.kms.Alias("a", name="alias/inference-platform-dev/cluster", target_key_id="k")

    assert violations(program, POLICY) == []


def test_the_old_40_character_cut_fails_on_the_elasticache_id_naming_value_and_limit(violations):
    # production-us-east-1 (20 characters) under the old rule: f"{prefix}-rl"[:40] ends on '-'.
    old = "inference-platform-production-us-east-1-rl"[:40]

    def program():
        aws.elasticache.ReplicationGroup("rg", replication_group_id=old, description="d")
        aws.elasticache.ReplicationGroup("long", replication_group_id="r" * 41, description="d")
        aws.elasticache.ReplicationGroup("double", replication_group_id="a--b", description="d")

    found = {v.urn.rsplit("::", 1)[1]: v.message for v in violations(program, POLICY)}
    assert sorted(found) == ["double", "long", "rg"]
    assert repr(old) in found["rg"] and "ElastiCache replication group id" in found["rg"]
    assert "has 41 characters; at most 40" in found["long"]
    assert "CreateReplicationGroup" in found["rg"]  # the source is named


def test_the_old_cut_at_25_characters_gives_an_ecr_name_aws_refuses(violations):
    # production-us-east-1-blue: the cut prefix ends on '-', so the repository path has '-/'.
    prefix = "inference-platform-production-us-east-1-blue"[:40]

    def program():
        aws.ecr.Repository("repo", name=f"{prefix}/inference")

    (found,) = violations(program, POLICY)
    assert "ECR repository name" in found.message and f"{prefix}/inference" in found.message


def test_prefixes_are_checked_with_the_26_characters_the_provider_appends(violations):
    def program():
        aws.iam.Role("role", name_prefix="r" * 39, assume_role_policy="{}")  # 38 at most
        aws.s3.Bucket("bucket", bucket_prefix="b" * 38)  # 37 at most
        aws.lb.TargetGroup("tg", name_prefix="tg-abcd")  # 6 at most
        aws.iam.Role("fits", name_prefix="r" * 38, assume_role_policy="{}")

    found = {v.urn.rsplit("::", 1)[1]: v.message for v in violations(program, POLICY)}
    assert sorted(found) == ["bucket", "role", "tg"]
    assert "prefix namePrefix=" in found["role"] and "appends 26" in found["role"] and "at most 64" in found["role"]


def test_autonamed_resources_are_checked_as_pulumi_names_them(violations):
    def program():
        aws.iam.Role("r" * 57, assume_role_policy="{}")  # + '-' + 7 hex = 65 > 64
        aws.iam.Role("r" * 56, assume_role_policy="{}")  # 64: fits
        aws.lb.TargetGroup("inference-edge-targets-a")  # 24 + 8 = 32: fits
        aws.lb.TargetGroup("inference-edge-targets-ab")

    found = violations(program, POLICY)
    assert _names(found) == ["inference-edge-targets-ab", "r" * 57]
    assert all("autonamed" in v.message for v in found)


def test_names_inside_a_resource_are_checked(violations):
    def program():
        aws.wafv2.WebAcl("acl", name="edge", scope="REGIONAL", default_action={"allow": {}},
                         visibility_config={"cloudwatch_metrics_enabled": True, "metric_name": "edge",
                                            "sampled_requests_enabled": True},
                         rules=[{"name": "rate per ip", "priority": 1, "action": {"block": {}},
                                 "statement": {"rate_based_statement": {"limit": 100, "aggregate_key_type": "IP"}},
                                 "visibility_config": {"cloudwatch_metrics_enabled": True, "metric_name": "edge rate",
                                                       "sampled_requests_enabled": True}}])  # fmt: skip

    messages = [v.message for v in violations(program, POLICY)]
    assert len(messages) == 2, messages
    assert any("WAF rule name rules[].name='rate per ip'" in m for m in messages)
    assert any("WAF rule metric name" in m and "'edge rate'" in m for m in messages)


def test_a_stack_name_with_a_hash_passes_every_row():
    long = fit_name("inference-platform-production-us-east-1a-green", 40)
    for rule in NAME_RULES:
        if rule.type.startswith("aws:kms/"):
            value = f"alias/{long}/cluster"
        elif "ecr" in rule.type:
            value = f"{long}/inference"
        else:
            value = fit_name(f"{long}-x", rule.max) if rule.max else f"{long}-x"
        assert rule.problem(value) is None, (rule.type, rule.prop, value)


# --- the table, pinned against its sources ---------------------------------------------------------------


def test_botocore_is_the_version_the_table_cites():
    locked = require_locked("botocore")  # else: broken install
    assert BOTOCORE.split()[:2] == ["botocore", locked], moved_past("botocore", BOTOCORE.split()[1])
    assert all(r.source.startswith((BOTOCORE, PULUMI_AWS)) for r in NAME_RULES)


def _shape(service: str, version: str, shape: str) -> dict:
    path = BOTOCORE_DATA / service / version / "service-2.json.gz"
    return json.loads(gzip.decompress(path.read_bytes()))["shapes"][shape]


SHAPE = re.compile(r"botocore/data/(?P<service>[a-z0-9]+)/(?P<version>[0-9-]+) shape (?P<shape>\w+)")


@pytest.mark.parametrize("rule", [r for r in NAME_RULES if SHAPE.search(r.source)], ids=lambda r: f"{r.type}.{r.prop}")
def test_rows_citing_a_botocore_shape_agree_with_it(rule: NameRule):
    m = SHAPE.search(rule.source)
    assert m
    shape = _shape(m["service"], m["version"], m["shape"])
    assert shape.get("max") == rule.max, f"{m['shape']}: max {shape.get('max')}"
    assert shape.get("min", 1) == rule.min
    if "pattern" in shape:
        upstream = shape["pattern"].removeprefix("^").removesuffix("$")
        assert upstream in rule.pattern, f"{m['shape']}: pattern {shape['pattern']} not in {rule.pattern}"


@pytest.mark.parametrize(
    ("service", "version", "operation", "member", "words"),
    [
        # Limits botocore states in the member's documentation rather than in the shape.
        ("elasticache", "2015-02-02", "CreateReplicationGroup", "ReplicationGroupId",
         ["1 to 40 alphanumeric characters or hyphens", "first character must be a letter", "cannot end with a hyphen"]),
        ("elasticache", "2015-02-02", "CreateCacheCluster", "CacheClusterId", ["1 to 50 alphanumeric"]),
        ("elbv2", "2015-12-01", "CreateTargetGroup", "Name", ["maximum of 32 characters", "not begin or end with a hyphen"]),
        ("elbv2", "2015-12-01", "CreateLoadBalancer", "Name", ["maximum of 32 characters", "internal-"]),
        ("sqs", "2012-11-05", "CreateQueue", "QueueName", ["up to 80 characters"]),
        ("ec2", "2016-11-15", "CreatePlacementGroup", "GroupName", ["Up to 255 ASCII characters"]),
        ("ec2", "2016-11-15", "CreateSecurityGroup", "GroupName", ["Up to 255 characters", "start with sg-"]),
        ("kms", "2014-11-01", "CreateAlias", "AliasName", ["must begin with alias/", "alias/aws/"]),
    ],
)  # fmt: skip
def test_limits_from_botocore_documentation(service, version, operation, member, words):
    path = BOTOCORE_DATA / service / version
    model = json.loads(gzip.decompress((path / "service-2.json.gz").read_bytes())) if (
        path / "service-2.json.gz").is_file() else json.loads((path / "service-2.json").read_text())  # fmt: skip
    request = model["operations"][operation]["input"]["shape"]
    doc = re.sub(r"<[^>]+>", "", model["shapes"][request]["members"][member].get("documentation", ""))
    doc = re.sub(r"\s+", " ", doc)
    for word in words:
        assert word in doc, f"{service} {operation}.{member}: {word!r} not in {doc[:300]!r}"
    assert any(operation in r.source for r in NAME_RULES), f"no row cites {operation}"


@pytest.mark.parametrize(
    ("module", "words"),
    [
        ("eks/node_group.py", ["can't be longer than 63 characters", "must start with a letter or digit"]),
        ("s3/bucket.py", ["less than or equal to 63 characters", "less than or equal to 37 characters"]),
        ("cloudwatch/event_rule.py", ["must be 38 characters or less"]),
        ("lb/target_group.py", ["Cannot be longer than 6 characters"]),
    ],
)
def test_limits_from_pulumi_aws_docstrings(module, words):
    locked = require_locked("pulumi-aws")  # else: broken install
    assert PULUMI_AWS.split()[:2] == ["pulumi-aws", locked], moved_past("pulumi-aws", PULUMI_AWS.split()[1])
    text = (Path(aws.__file__).parent / module).read_text()
    for word in words:
        assert word in text, f"pulumi_aws/{module}: {word!r}"


def test_one_row_per_type_and_property():
    keys = [(r.type, r.prop) for r in NAME_RULES]
    assert len(keys) == len(set(keys))
    assert sum(len(v) for v in RULES_BY_TYPE.values()) == len(NAME_RULES)
