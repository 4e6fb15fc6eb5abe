"""Names AWS accepts, vendored as lists (a pattern lets through names that merely look right).

Each list carries its source and the date it was read; a name AWS adds later is refused until it is
added here, which is the point: the plan never guesses. Nothing here depends on the machine the plan
runs on.
"""

from __future__ import annotations

from typing import Final

READ_ON: Final = "2026-12-03"

ALB_TLS_POLICIES_SOURCE: Final = (
    "AWS Elastic Load Balancing User Guide, 'Security policies for your Application Load Balancer' "
    "(docs.aws.amazon.com/elasticloadbalancing/latest/application/describe-ssl-policies.html: TLS, FIPS and "
    "post-quantum (PQ) tables; console default ELBSecurityPolicy-TLS13-1-2-Res-PQ-2025-09), cross-checked with "
    "moto 5.2.5 moto/elbv2/ssl_policies.py and AWS Security Hub control ELB.17's policy list; read 2026-12-03. "
    "botocore has no enum of policy names."
)
ALB_TLS13_POLICIES: Final = frozenset(
    {
        # TLS 1.3 only.
        "ELBSecurityPolicy-TLS13-1-3-2021-06",
        "ELBSecurityPolicy-TLS13-1-3-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-3-FIPS-2023-04",
        "ELBSecurityPolicy-TLS13-1-3-FIPS-PQ-2025-09",
        # TLS 1.3 and 1.2.
        "ELBSecurityPolicy-TLS13-1-2-2021-06",
        "ELBSecurityPolicy-TLS13-1-2-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-Res-2021-06",
        "ELBSecurityPolicy-TLS13-1-2-Res-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-Ext1-2021-06",
        "ELBSecurityPolicy-TLS13-1-2-Ext1-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-Ext2-2021-06",
        "ELBSecurityPolicy-TLS13-1-2-Ext2-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-FIPS-2023-04",
        "ELBSecurityPolicy-TLS13-1-2-FIPS-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-Res-FIPS-2023-04",
        "ELBSecurityPolicy-TLS13-1-2-Res-FIPS-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-Ext0-FIPS-2023-04",
        "ELBSecurityPolicy-TLS13-1-2-Ext0-FIPS-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-Ext1-FIPS-2023-04",
        "ELBSecurityPolicy-TLS13-1-2-Ext1-FIPS-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-2-Ext2-FIPS-2023-04",
        "ELBSecurityPolicy-TLS13-1-2-Ext2-FIPS-PQ-2025-09",
    }
)
"""ALB security policies that offer TLS 1.3 and accept nothing older than TLS 1.2 (what edge.tlsPolicy
allows). Left out on purpose: -TLS13-1-1-*/-TLS13-1-0-* (TLS 1.1/1.0), ELBSecurityPolicy-2016-08 and the
-TLS-1-2-*/-FS-* policies (no TLS 1.3)."""
ALB_OLDER_POLICIES: Final = frozenset(
    {
        "ELBSecurityPolicy-TLS13-1-1-2021-06",
        "ELBSecurityPolicy-TLS13-1-1-FIPS-2023-04",
        "ELBSecurityPolicy-TLS13-1-0-2021-06",
        "ELBSecurityPolicy-TLS13-1-0-PQ-2025-09",
        "ELBSecurityPolicy-TLS13-1-0-FIPS-2023-04",
        "ELBSecurityPolicy-TLS13-1-0-FIPS-PQ-2025-09",
        "ELBSecurityPolicy-TLS-1-2-Ext-2018-06",
        "ELBSecurityPolicy-TLS-1-2-2017-01",
        "ELBSecurityPolicy-TLS-1-1-2017-01",
        "ELBSecurityPolicy-2016-08",
        "ELBSecurityPolicy-FS-1-2-Res-2020-10",
        "ELBSecurityPolicy-FS-1-2-Res-2019-08",
        "ELBSecurityPolicy-FS-1-2-2019-08",
        "ELBSecurityPolicy-FS-1-1-2019-08",
        "ELBSecurityPolicy-FS-2018-06",
    }
)
"""Policies that exist but accept TLS older than 1.2 or offer no TLS 1.3: named as such when refused."""

WAF_MANAGED_RULE_GROUPS_SOURCE: Final = (
    "AWS WAF Developer Guide, 'AWS Managed Rules rule groups list' "
    "(docs.aws.amazon.com/waf/latest/developerguide/aws-managed-rule-groups-list.html) and the "
    "ManagedRuleGroupStatement API reference (wafv2 2019-07-29); read 2026-12-03."
)
WAF_MANAGED_RULE_GROUPS: Final = frozenset(
    {
        # Baseline rule groups.
        "AWSManagedRulesCommonRuleSet",
        "AWSManagedRulesAdminProtectionRuleSet",
        "AWSManagedRulesKnownBadInputsRuleSet",
        # Use-case specific rule groups.
        "AWSManagedRulesSQLiRuleSet",
        "AWSManagedRulesLinuxRuleSet",
        "AWSManagedRulesUnixRuleSet",
        "AWSManagedRulesWindowsRuleSet",
        "AWSManagedRulesPHPRuleSet",
        "AWSManagedRulesWordPressRuleSet",
        # IP reputation rule groups.
        "AWSManagedRulesAmazonIpReputationList",
        "AWSManagedRulesAnonymousIpList",
    }
)
"""Vendor ``AWS`` rule groups that run without ManagedRuleGroupConfigs, which is how the edge renders
them (inference_platform.components.edge.public_endpoint: name and vendor only)."""
WAF_CONFIGURED_RULE_GROUPS: Final = frozenset(
    {
        "AWSManagedRulesBotControlRuleSet",
        "AWSManagedRulesATPRuleSet",
        "AWSManagedRulesACFPRuleSet",
        "AWSManagedRulesAntiDDoSRuleSet",
    }
)
"""Groups that exist but need a ManagedRuleGroupConfigs block (inspection level, login or registration
paths, DDoS settings) and are billed per request: the stack does not render their configuration."""

ELASTICACHE_NODE_TYPES_SOURCE: Final = (
    "botocore 1.44.8 data/elasticache/2015-02-02/service-2.json, shape CacheNode documentation "
    "('The following node types are supported by ElastiCache', current generation); read 2026-12-03."
)
ELASTICACHE_NODE_TYPES: Final = frozenset(
    [f"cache.m7g.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")]
    + [f"cache.m6g.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")]
    + [f"cache.m5.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "12xlarge", "24xlarge")]
    + [f"cache.m4.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "10xlarge")]
    + [f"cache.t4g.{s}" for s in ("micro", "small", "medium")]
    + [f"cache.t3.{s}" for s in ("micro", "small", "medium")]
    + [f"cache.t2.{s}" for s in ("micro", "small", "medium")]
    + [f"cache.r7g.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")]
    + [f"cache.r6g.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")]
    + [f"cache.r5.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "12xlarge", "24xlarge")]
    + [f"cache.r4.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")]
)
"""Current-generation node types a new replication group can use."""
ELASTICACHE_PREVIOUS_GENERATION: Final = frozenset(
    ["cache.t1.micro", "cache.c1.xlarge"]
    + [f"cache.m1.{s}" for s in ("small", "medium", "large", "xlarge")]
    + [f"cache.m3.{s}" for s in ("medium", "large", "xlarge", "2xlarge")]
    + [f"cache.m2.{s}" for s in ("xlarge", "2xlarge", "4xlarge")]
    + [f"cache.r3.{s}" for s in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge")]
)
"""'Existing clusters are still supported but creation of new clusters is not supported for these types.'"""

CAPACITY_BLOCK_SOURCE: Final = (
    "Amazon EC2 User Guide, 'Capacity Blocks for ML', Supported instance types and Regions "
    "(docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html); read 2026-12-03."
)
CAPACITY_BLOCK_FAMILIES: Final = frozenset(
    {"p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200", "trn1", "trn2"}
)
"""Instance families AWS sells Capacity Blocks for ML for (the p4d/p4de/p5/p5e/p5en/p6 and Trainium families)."""


def instance_family(instance_type: str) -> str:
    """``p5`` for ``p5.48xlarge``, ``p6-b200`` for ``p6-b200.48xlarge``."""
    return instance_type.split(".", 1)[0]
