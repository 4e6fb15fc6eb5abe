"""Dated, sourced price table per region: EC2 instance hours and the AWS services a stack creates.

Pure data, no Pulumi. Every figure names its source; a figure that is an assumption says so. Costs this
table does not know are *unknown* (``None``), never 0: a reader must see what is not priced.

- EC2 on-demand: ``instances.PRICE_SOURCE`` (AWS Price List API for us-east-1 as generated into
  aws/karpenter-provider-aws, 2026-07-20), through ``InstanceType.price_per_hour_usd``.
- Services (us-east-1 list prices, AWS pricing pages): EKS, NAT gateway, ALB, FSx for Lustre, S3, KMS,
  Secrets Manager, CloudWatch Logs, EBS, VPC endpoints, public IPv4, ECR, WAF, Route 53, ElastiCache.
- Other regions: ``REGIONS`` maps each priced region to a factor on the us-east-1 figures and the
  evidence for it. us-east-2 and us-west-2 list the same Linux on-demand and service rates as us-east-1
  for everything priced here (e.g. AWS's EC2 Capacity Blocks page lists p5.48xlarge at the same rate in
  N. Virginia and Ohio); the factor 1.0 is that observation, re-check it against the Price List API
  before relying on a difference of a few percent. A region missing from ``REGIONS`` is refused.
- Spot and reserved discounts vary by pool and term (REFERENCE §5): they are factors with defaults
  that are assumptions, overridable per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from inference_platform.catalog import instances as catalog
from inference_platform.catalog.instances import CatalogError

PRICE_DATE: Final = catalog.PRICE_DATE
HOURS_PER_MONTH: Final = 730  # AWS's billing month (8,760 h / 12)
BASE_REGION: Final = "us-east-1"

SERVICE_SOURCE: Final = "AWS pricing pages, us-east-1 list prices (Linux, standard tier), as of " + PRICE_DATE

# Assumptions (not list prices): the average Spot price of GPU pools relative to on-demand, and a
# 1-year no-upfront Savings Plan / reserved rate. Spot GPU discounts seen in AWS's Spot Instance Advisor
# range ~40-75 %; 0.45 is a middle figure. Compute Savings Plans list ~28-40 % off for 1 year.
DEFAULT_SPOT_FACTOR: Final = 0.45
DEFAULT_RESERVED_FACTOR: Final = 0.65


class PriceError(CatalogError):
    """A region or an item the price table does not cover."""


@dataclass(frozen=True, kw_only=True)
class RegionPricing:
    region: str
    factor: float
    """Multiplier on the us-east-1 figures."""
    evidence: str


REGIONS: Final[dict[str, RegionPricing]] = {
    r.region: r
    for r in (
        RegionPricing(region="us-east-1", factor=1.0, evidence=catalog.PRICE_SOURCE),
        RegionPricing(
            region="us-east-2",
            factor=1.0,
            evidence="same list rates as us-east-1 for the families and services priced here (AWS EC2 "
            "Capacity Blocks pricing page: p5.48xlarge identical in N. Virginia and Ohio)",
        ),
        RegionPricing(
            region="us-west-2",
            factor=1.0,
            evidence="same list rates as us-east-1 for the families and services priced here (AWS pricing "
            "pages; p4d.24xlarge Capacity Blocks identical in Ohio and Oregon)",
        ),
    )
}

# Monthly or hourly service prices in us-east-1, USD.
EKS_CLUSTER_HOUR: Final = 0.10  # standard support; extended support is 0.60
NAT_GATEWAY_HOUR: Final = 0.045
NAT_GATEWAY_GB: Final = 0.045
ALB_HOUR: Final = 0.0225
ALB_LCU_HOUR: Final = 0.008
INTERFACE_ENDPOINT_AZ_HOUR: Final = 0.01
INTERFACE_ENDPOINT_GB: Final = 0.01
PUBLIC_IPV4_HOUR: Final = 0.005  # every public IPv4 address, attached or not (since 2024-02)
S3_STANDARD_GB_MONTH: Final = 0.023
S3_PUT_PER_1000: Final = 0.005  # PUT, COPY, POST, LIST requests (S3 Standard)
S3_GET_PER_1000: Final = 0.0004  # GET, SELECT and all other requests
SQS_STANDARD_PER_MILLION: Final = 0.40  # standard queue requests after the account's free 1M a month; each 64 KiB
# of a payload is billed as one request (Amazon SQS pricing, us-east-1)
SQS_FIFO_PER_MILLION: Final = 0.50
SQS_FREE_REQUESTS_MONTH: Final = 1_000_000  # per account, not per queue: the estimate does not subtract it
KMS_KEY_MONTH: Final = 1.0
SECRET_MONTH: Final = 0.40
LOGS_INGEST_GB: Final = 0.50
LOGS_STORE_GB_MONTH: Final = 0.03
EBS_GP3_GB_MONTH: Final = 0.08
# gp3 beyond its free 3,000 IOPS and 125 MiB/s (AWS EBS pricing, us-east-1): per provisioned IOPS-month and
# per MiB/s-month.
EBS_GP3_IOPS_MONTH: Final = 0.005
EBS_GP3_MIBPS_MONTH: Final = 0.040
EBS_GP3_FREE_IOPS: Final = 3000
EBS_GP3_FREE_MIBPS: Final = 125


def gp3_performance_month(iops: float | None, mib_s: float | None, region: str) -> float:
    """What a gp3 volume's provisioned IOPS and throughput above the free baseline cost a month."""
    extra_iops = max(0.0, (iops or EBS_GP3_FREE_IOPS) - EBS_GP3_FREE_IOPS)
    extra_mib_s = max(0.0, (mib_s or EBS_GP3_FREE_MIBPS) - EBS_GP3_FREE_MIBPS)
    return service(extra_iops * EBS_GP3_IOPS_MONTH + extra_mib_s * EBS_GP3_MIBPS_MONTH, region)


EBS_FSR_AZ_HOUR: Final = 0.75
"""Fast snapshot restore, per snapshot per Availability Zone-hour (Amazon EBS pricing, us-east-1: "$0.75 per 1 DSU
hour on each snapshot in each AZ"), billed per minute while enabled."""
EBS_SNAPSHOT_GB_MONTH: Final = 0.05
"""Standard snapshot storage (Amazon EBS pricing, us-east-1), on the blocks the snapshot holds."""


def fsr_month(region: str) -> float:
    """Fast snapshot restore of one snapshot in one zone, a month."""
    return service(EBS_FSR_AZ_HOUR, region) * HOURS_PER_MONTH


EBS_GP2_GB_MONTH: Final = 0.10
ECR_GB_MONTH: Final = 0.10
WAF_ACL_MONTH: Final = 5.0
WAF_RULE_MONTH: Final = 1.0
ROUTE53_ZONE_MONTH: Final = 0.50
# FSx for Lustre PERSISTENT_2 SSD, per GB-month by throughput tier (MB/s per TiB).
FSX_PERSISTENT_2_GB_MONTH: Final[dict[int, float]] = {125: 0.145, 250: 0.210, 500: 0.340, 1000: 0.600}
FSX_SCRATCH_2_GB_MONTH: Final = 0.140
# ElastiCache on-demand node hours (Redis OSS / Valkey list prices).
ELASTICACHE_NODE_HOUR: Final[dict[str, float]] = {
    "cache.t4g.micro": 0.016,
    "cache.t4g.small": 0.032,
    "cache.t4g.medium": 0.065,
    "cache.m7g.large": 0.158,
    "cache.r7g.large": 0.219,
}


def region_pricing(region: str) -> RegionPricing:
    """The pricing of ``region``; PriceError naming the priced regions when the table lacks it."""
    found = REGIONS.get(region)
    if found is None:
        raise PriceError(f"the price table has no region {region!r}: priced regions are {', '.join(sorted(REGIONS))}")
    return found


def instance_hour(instance_type: str, region: str) -> float | None:
    """On-demand $/h of ``instance_type`` in ``region``; None when the catalog has no price for it."""
    factor = region_pricing(region).factor
    try:
        return catalog.instance(instance_type).price_per_hour_usd * factor
    except CatalogError:
        return None


def service(price: float, region: str) -> float:
    """A us-east-1 service price carried to ``region``."""
    return price * region_pricing(region).factor


def fsx_gb_month(deployment_type: str, throughput_per_tib: int | None, region: str) -> float | None:
    if deployment_type == "PERSISTENT_2" and throughput_per_tib in FSX_PERSISTENT_2_GB_MONTH:
        return service(FSX_PERSISTENT_2_GB_MONTH[throughput_per_tib], region)
    if deployment_type == "SCRATCH_2":
        return service(FSX_SCRATCH_2_GB_MONTH, region)
    return None


def elasticache_node_hour(node_type: str, region: str) -> float | None:
    price = ELASTICACHE_NODE_HOUR.get(node_type)
    return None if price is None else service(price, region)
