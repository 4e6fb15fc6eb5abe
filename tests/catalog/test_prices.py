"""The price table: dated and sourced, us-east-1 agrees with REFERENCE §5, unknown is None, missing
regions are refused."""

from __future__ import annotations

import pytest

from inference_platform.catalog import prices


@pytest.mark.parametrize(
    ("instance_type", "usd"),
    [("p5.48xlarge", 55.04), ("p5en.48xlarge", 63.296), ("p6-b200.48xlarge", 113.93), ("g6e.xlarge", 1.861)],
)
def test_us_east_1_matches_reference_section_5(instance_type, usd):
    assert prices.instance_hour(instance_type, "us-east-1") == pytest.approx(usd, abs=0.01)


def test_every_region_has_evidence_and_the_table_is_dated():
    assert prices.PRICE_DATE and prices.SERVICE_SOURCE
    assert all(r.evidence for r in prices.REGIONS.values())


def test_unknown_items_are_none_not_zero():
    assert prices.instance_hour("x9.huge", "us-east-1") is None
    assert prices.elasticache_node_hour("cache.x1.huge", "us-east-1") is None
    assert prices.fsx_gb_month("PERSISTENT_2", 40, "us-east-1") is None
    assert prices.fsx_gb_month("PERSISTENT_2", 500, "us-east-1") == 0.34


def test_missing_region_is_refused_naming_the_priced_ones():
    with pytest.raises(prices.PriceError, match=r"eu-west-1.*us-east-1"):
        prices.region_pricing("eu-west-1")
