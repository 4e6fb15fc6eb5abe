"""The AWS managed WAF body rules the edge counts (issue 28 R3), as AWS documents them: AWS WAF developer guide,
"Baseline rule groups" (read from awsdocs/aws-waf-and-shield-advanced-developer-guide
doc_source/aws-managed-rule-groups-baseline.md). Every rule of the core rule set and the known-bad-inputs group whose
name ends ``_BODY`` (the ones that read the request body) is listed, with AWS's description quoted."""

from __future__ import annotations

from inference_platform.catalog import waf_body_rules as waf
from inference_platform.components.edge.public_endpoint import DEFAULT_COUNTED_RULES

# The rule names of each group's table in that page (latest static version).
COMMON_RULES = (
    "NoUserAgent_HEADER", "UserAgent_BadBots_HEADER", "SizeRestrictions_QUERYSTRING", "SizeRestrictions_Cookie_HEADER",
    "SizeRestrictions_BODY", "SizeRestrictions_URIPATH", "EC2MetaDataSSRF_BODY", "EC2MetaDataSSRF_COOKIE",
    "EC2MetaDataSSRF_URIPATH", "EC2MetaDataSSRF_QUERYARGUMENTS", "GenericLFI_QUERYARGUMENTS", "GenericLFI_URIPATH",
    "GenericLFI_BODY", "RestrictedExtensions_URIPATH", "RestrictedExtensions_QUERYARGUMENTS",
    "GenericRFI_QUERYARGUMENTS", "GenericRFI_BODY", "GenericRFI_URIPATH", "CrossSiteScripting_COOKIE",
    "CrossSiteScripting_QUERYARGUMENTS", "CrossSiteScripting_BODY", "CrossSiteScripting_URIPATH",
)  # fmt: skip
KNOWN_BAD_INPUTS_RULES = (
    "JavaDeserializationRCE_HEADER", "JavaDeserializationRCE_BODY", "JavaDeserializationRCE_URIPATH",
    "JavaDeserializationRCE_QUERYSTRING", "Host_localhost_HEADER", "PROPFIND_METHOD", "ExploitablePaths_URIPATH",
    "Log4JRCE_HEADER", "Log4JRCE_QUERYSTRING", "Log4JRCE_BODY", "Log4JRCE_URIPATH",
)  # fmt: skip


def test_every_body_rule_of_both_groups_is_decided_and_nothing_else():
    assert set(waf.BODY_RULES[waf.COMMON_RULE_SET]) == {r for r in COMMON_RULES if r.endswith("_BODY")}
    assert set(waf.BODY_RULES[waf.KNOWN_BAD_INPUTS]) == {r for r in KNOWN_BAD_INPUTS_RULES if r.endswith("_BODY")}
    for rules in waf.BODY_RULES.values():
        assert all(reason.startswith('"') and ": " in reason for reason in rules.values())


def test_the_component_counts_exactly_the_body_rules():
    assert {g: set(r) for g, r in DEFAULT_COUNTED_RULES.items()} == {g: set(r) for g, r in waf.BODY_RULES.items()}
    assert waf.counted_rules(["AWSManagedRulesAmazonIpReputationList", waf.COMMON_RULE_SET]) == {
        waf.COMMON_RULE_SET: tuple(waf.BODY_RULES[waf.COMMON_RULE_SET])
    }
