"""Refresh ``instance_io.json`` from the installed moto: ``python -m inference_platform.catalog.instance_io_refresh``.

moto ships AWS's DescribeInstanceTypes answers in ``moto/ec2/resources/instance_types.json.gz``. This keeps, for the
catalog's instance types (``instances.CATALOG``), what the cold-start model reads (``instance_io`` module doc), with
the moto version, the path and the date.

``--check`` exits 1 when the vendored file differs from what the installed moto gives (besides the date). Run with
the project's venv (moto is a dev dependency); the catalog itself never imports moto.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import importlib.metadata
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from inference_platform.catalog.instance_io import DATA_FILE, RESOURCE_FILE
from inference_platform.catalog.instances import CATALOG


def moto_types() -> tuple[str, dict[str, Any]]:
    """The installed moto's version and its DescribeInstanceTypes answers by type."""
    spec = importlib.util.find_spec("moto")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("moto is not installed (it is a dev dependency: `make venv`)")
    path = Path(next(iter(spec.submodule_search_locations))) / Path(*RESOURCE_FILE.split("/")[1:])
    return importlib.metadata.version("moto"), json.loads(gzip.decompress(path.read_bytes()))


def row(raw: dict[str, Any]) -> dict[str, Any]:
    network = raw.get("NetworkInfo") or {}
    cards = network.get("NetworkCards") or []
    default = int(network.get("DefaultNetworkCardIndex") or 0)
    card = next((c for c in cards if int(c.get("NetworkCardIndex", 0)) == default), cards[0] if cards else {})
    ebs = (raw.get("EbsInfo") or {}).get("EbsOptimizedInfo") or {}
    disks = (raw.get("InstanceStorageInfo") or {}).get("Disks") or []
    return {
        "vcpus": int((raw.get("VCpuInfo") or {}).get("DefaultVCpus") or 0),
        "memory_mib": int((raw.get("MemoryInfo") or {}).get("SizeInMiB") or 0),
        "network_cards": max(1, len(cards)),
        "default_card_baseline_gbps": float(card.get("BaselineBandwidthInGbps") or 0.0),
        "default_card_peak_gbps": float(card.get("PeakBandwidthInGbps") or 0.0),
        "ebs_baseline_mb_s": float(ebs.get("BaselineThroughputInMBps") or 0.0),
        "ebs_maximum_mb_s": float(ebs.get("MaximumThroughputInMBps") or 0.0),
        "nvme_disks": sum(int(d.get("Count") or 0) for d in disks if d.get("Type") == "ssd"),
        "nvme_disk_gb": max((int(d.get("SizeInGB") or 0) for d in disks if d.get("Type") == "ssd"), default=0),
    }


def build(today: str | None = None) -> dict[str, Any]:
    version, types = moto_types()
    missing = sorted(t for t in CATALOG if t not in types)
    return {
        "source": {
            "package": "moto",
            "version": version,
            "path": RESOURCE_FILE,
            "what": "EC2 DescribeInstanceTypes (network cards, EBS-optimized throughput, instance store), as shipped "
            "in moto",
            "refresh": "python -m inference_platform.catalog.instance_io_refresh",
        },
        "date": today or dt.date.today().isoformat(),
        "typesWithoutData": missing,
        "instanceTypes": {t: row(types[t]) for t in sorted(CATALOG) if t in types},
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference_platform.catalog.instance_io_refresh",
                                     description=__doc__)  # fmt: skip
    parser.add_argument("--check", action="store_true", help="compare with the vendored file, write nothing")
    args = parser.parse_args(argv)
    fresh = build()
    if args.check:
        current = json.loads(DATA_FILE.read_text())
        fresh["date"] = current.get("date")
        if current != fresh:
            print(f"{DATA_FILE} differs from moto {fresh['source']['version']}: run without --check", file=sys.stderr)
            return 1
        print(f"{DATA_FILE} matches moto {fresh['source']['version']}")
        return 0
    DATA_FILE.write_text(render(fresh))
    print(f"wrote {DATA_FILE} from moto {fresh['source']['version']} ({len(fresh['instanceTypes'])} types)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
