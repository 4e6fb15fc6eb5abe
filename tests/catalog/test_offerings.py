"""Instance offerings per zone (catalog/offerings.py, instance_offerings.json): the vendored
data is AWS's DescribeInstanceTypeOfferings as moto 5.2.5 ships it under
``moto/ec2/resources/instance_type_offerings/{region,availability-zone,availability-zone-id}/<region>.json.gz``,
and the refresh command reproduces it from the installed moto, the lock's (tests/locks.py)."""

from __future__ import annotations

import json

import pytest

from inference_platform.catalog import offerings, offerings_refresh
from inference_platform.catalog.instances import CATALOG
from inference_platform.catalog.regions import REGIONS
from tests.locks import moved_past, read_at, require_locked


def test_the_data_file_names_its_source_version_path_and_date():
    data = offerings.data()
    assert data["source"]["package"] == "moto" and data["source"]["version"] == read_at("moto")
    assert data["source"]["path"].startswith("moto/ec2/resources/instance_type_offerings/")
    assert data["date"] == "2026-12-03"
    assert data["instanceTypes"] == sorted(CATALOG)
    assert set(data["regions"]) | set(data["regionsWithoutData"]) == set(REGIONS)


def test_upstream_facts_the_stacks_rely_on():
    # moto 5.2.5 ec2/resources/instance_type_offerings/availability-zone-id/us-east-2.json.gz
    assert offerings.zone_ids_offering("trn1.32xlarge", "us-east-2") == ("use2-az3",)
    assert offerings.zone_id_by_name("us-east-2")["us-east-2c"] == "use2-az3"
    # .../availability-zone-id/us-east-1.json.gz: p5 everywhere, p5en (prod's suggested swap) in two zones.
    assert len(offerings.zone_ids_offering("p5.48xlarge", "us-east-1")) == 6
    assert offerings.zone_ids_offering("p5en.48xlarge", "us-east-1") == ("use1-az2", "use1-az6")
    assert offerings.names_are_account_specific("us-east-1") and not offerings.names_are_account_specific("us-east-2")


def test_the_vendored_file_was_read_from_the_locked_moto():
    locked = require_locked("moto")  # else: broken install
    assert offerings_refresh.moto_resources()[0] == locked
    assert offerings.data()["source"]["version"] == locked, moved_past("moto")


def test_refresh_from_the_installed_moto_reproduces_the_vendored_file():
    if offerings.data()["source"]["version"] != require_locked("moto"):
        pytest.fail(moved_past("moto"))
    fresh = offerings_refresh.build(today=offerings.data()["date"])
    assert fresh == json.loads(offerings.DATA_FILE.read_text())
    assert offerings_refresh.main(["--check"]) == 0


def test_uniform_regions_are_checked_by_name():
    (gap,) = offerings.unoffered(["trn1.32xlarge", "inf2.24xlarge"], "us-east-2", ["us-east-2a", "us-east-2b"])
    assert gap.instance_type == "trn1.32xlarge" and gap.zones == ("us-east-2a", "us-east-2b")
    assert "us-east-2c (use2-az3)" in gap.describe("us-east-2") and f"moto {read_at('moto')}" in gap.describe(
        "us-east-2"
    )
    assert offerings.unoffered(["trn1.32xlarge"], "us-east-2", ["us-east-2c"]) == []


def test_account_specific_names_are_checked_by_zone_id_or_only_by_count():
    # No mapping: a name can be any zone, so only "offered in fewer zones than asked" is certain.
    assert offerings.unoffered(["p5en.48xlarge"], "us-east-1", ["us-east-1a", "us-east-1b"]) == []
    (gap,) = offerings.unoffered(["p6-b200.48xlarge"], "us-east-1", ["us-east-1a", "us-east-1b"])
    assert gap.by_count and "use1-az6" in gap.describe("us-east-1")
    # With the account's mapping, by zone ID.
    account = {"us-east-1a": "use1-az6", "us-east-1b": "use1-az1"}
    (gap,) = offerings.unoffered(["p5en.48xlarge"], "us-east-1", ["us-east-1a", "us-east-1b"], account)
    assert gap.zones == ("us-east-1b",) and gap.zone_ids == ("use1-az1",)


def test_a_type_a_region_does_not_offer_and_a_region_without_data():
    missing = next(
        (r, t)
        for r in sorted(offerings.data()["regions"])
        for t in sorted(CATALOG)
        if not offerings.offered_in_region(t, r)
    )
    (gap,) = offerings.unoffered([missing[1]], missing[0], [f"{missing[0]}a"])
    assert "not offered in" in gap.describe(missing[0]) and "at all" in gap.describe(missing[0])
    assert offerings.unoffered(["p5.48xlarge"], "us-gov-east-1", ["us-gov-east-1a"]) == []
