"""The vendored AWS name lists (catalog/aws_names.py) agree with the machine-readable sources
installed here: moto 5.2.5's ELBv2 policy table and botocore 1.44.8's ElastiCache node-type list, the locked
versions (tests/locks.py: an installed version that differs is a broken install)."""

from __future__ import annotations

import re

import botocore.session
from moto.elbv2.ssl_policies import SSL_POLICIES

from inference_platform.catalog import aws_names, time_zones
from tests.locks import moved_past, read_at, require_locked


def test_the_sources_are_the_locked_versions_the_tables_were_read_at():
    for name in ("moto", "botocore"):
        assert read_at(name) == require_locked(name), moved_past(name)


def test_every_moto_policy_is_classified_and_ours_match_its_protocols():
    for name, policy in SSL_POLICIES.items():
        protocols = set(policy["ssl_protocols"])
        modern = "TLSv1.3" in protocols and protocols <= {"TLSv1.3", "TLSv1.2"}
        assert (name in aws_names.ALB_TLS13_POLICIES) == modern, name
        assert name in aws_names.ALB_TLS13_POLICIES | aws_names.ALB_OLDER_POLICIES, name
    assert not aws_names.ALB_TLS13_POLICIES & aws_names.ALB_OLDER_POLICIES
    assert all(re.fullmatch(r"ELBSecurityPolicy-TLS13-1-[23]-[A-Za-z0-9-]+", n) for n in aws_names.ALB_TLS13_POLICIES)


def test_elasticache_node_types_are_botocores_current_generation():
    doc = botocore.session.get_session().get_service_model("elasticache").shape_for("CacheNode").documentation
    text = re.sub(r"<[^>]+>", " ", doc)
    current, previous = set(), set()
    for part in re.split(r"(Current generation|Previous generation)", text)[1:]:
        if part in ("Current generation", "Previous generation"):
            target = current if part == "Current generation" else previous
            continue
        target |= set(re.findall(r"cache\.[a-z0-9]+\.[a-z0-9]+", part))
    assert current == aws_names.ELASTICACHE_NODE_TYPES
    assert previous == aws_names.ELASTICACHE_PREVIOUS_GENERATION


def test_waf_lists_are_disjoint_and_named_like_aws_groups():
    assert not aws_names.WAF_MANAGED_RULE_GROUPS & aws_names.WAF_CONFIGURED_RULE_GROUPS
    assert all(n.startswith("AWSManagedRules") for n in aws_names.WAF_MANAGED_RULE_GROUPS)


def test_time_zones_are_the_tzdata_packages():
    assert time_zones.IANA_VERSION >= "2026a"
    names = time_zones.names()
    assert len(names) > 500 and "UTC" in names and "localtime" not in names and "Factory" not in names
