"""The rates the cold-start model reads (catalog/transfer_rates.py, catalog/instance_io.py): each cited with its basis;
instance data paths vendored from moto's DescribeInstanceTypes and reproducible from the locked moto."""

from __future__ import annotations

import json

import pytest

from inference_platform.catalog import instance_io, instance_io_refresh
from inference_platform.catalog import transfer_rates as rates
from inference_platform.catalog.instances import CATALOG
from inference_platform.catalog.lustre import THROUGHPUT_MB_S_PER_TIB
from tests.locks import moved_past, read_at, require_locked

RATES = [v for v in vars(rates).values() if isinstance(v, rates.Rate)]


def test_every_rate_names_its_source_and_basis():
    assert len(RATES) >= 10
    for rate in RATES:
        assert rate.value > 0 and rate.unit and rate.source and rate.basis in ("published", "second-hand", "assumption")
    # Published figures quote their page: S3's per-connection guidance, EC2's single-flow limit.
    assert "85-90 MB/s" in rates.S3_PER_CONNECTION.source and rates.S3_PER_CONNECTION.value == 85
    assert "5 Gbps" in rates.SINGLE_FLOW.source


def test_fsx_tiers_are_persistent_2s_and_scale_with_the_tier():
    assert sorted(rates.LUSTRE_PERSISTENT_2) == list(THROUGHPUT_MB_S_PER_TIB["PERSISTENT_2"])
    for tier, row in rates.LUSTRE_PERSISTENT_2.items():
        assert row.disk_baseline_mb_s == tier and row.network_baseline_mb_s > row.disk_baseline_mb_s
    # The FSx guide's table (ssd-storage.html): 1000 MB/s/TiB reads 2,600 MB/s per TiB from the network, 27.3 GiB
    # of RAM cache per TiB.
    assert rates.LUSTRE_PERSISTENT_2[1000].network_baseline_mb_s == 2600
    assert rates.LUSTRE_PERSISTENT_2[1000].cache_gib == 27.3


def test_instance_io_is_describe_instance_types_as_the_locked_moto_ships_it():
    data = instance_io.data()
    assert data["source"]["package"] == "moto" and data["source"]["version"] == read_at("moto")
    assert data["source"]["path"] == "moto/ec2/resources/instance_types.json.gz"
    assert data["typesWithoutData"] == [] and sorted(data["instanceTypes"]) == sorted(CATALOG)
    p5 = instance_io.instance_io("p5.48xlarge")
    assert (p5.network_cards, p5.default_card_baseline_gbps, p5.nvme_disks, p5.nvme_disk_gb) == (32, 100, 8, 3800)
    assert p5.ebs_baseline_mb_s == 10000
    assert instance_io.instance_io("inf2.48xlarge").nvme_disks == 0


def test_refresh_from_the_installed_moto_reproduces_the_vendored_file():
    if instance_io.data()["source"]["version"] != require_locked("moto"):
        pytest.fail(moved_past("moto"))
    fresh = instance_io_refresh.build(today=instance_io.data()["date"])
    assert fresh == json.loads(instance_io.DATA_FILE.read_text())
    assert instance_io_refresh.main(["--check"]) == 0
