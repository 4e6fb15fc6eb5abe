"""Refresh ``instance_offerings.json`` from the installed moto: ``python -m inference_platform.catalog.offerings_refresh``.

moto ships AWS's DescribeInstanceTypeOfferings answers under
``moto/ec2/resources/instance_type_offerings/{region,availability-zone,availability-zone-id}/<region>.json``
(gzipped in moto 5). This keeps the catalog's instance types (``instances.CATALOG``) in the regions the
product knows (``regions.REGIONS``) that moto has data for, and records the moto version, the paths and
the date. moto's per-zone-name answer was recorded in one account; in regions that map zone names
independently per account only the zone-ID answer holds for every account (``offerings`` module doc).

``--check`` exits 1 when the vendored file differs from what the installed moto gives (besides the date).
Run with the project's venv (moto is a dev dependency); the catalog itself never imports moto.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import importlib.metadata
import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

from inference_platform.catalog.instances import CATALOG
from inference_platform.catalog.offerings import DATA_FILE, RESOURCE_DIR
from inference_platform.catalog.regions import REGIONS

KINDS = ("region", "availability-zone", "availability-zone-id")


def moto_resources() -> tuple[str, Path]:
    """The installed moto's version and its ``instance_type_offerings`` directory."""
    spec = importlib.util.find_spec("moto")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("moto is not installed (it is a dev dependency: `make venv`)")
    root = Path(next(iter(spec.submodule_search_locations)))
    return importlib.metadata.version("moto"), root / Path(*RESOURCE_DIR.split("/")[1:])


def _read(directory: Path, kind: str, region: str) -> list[dict[str, str]] | None:
    for name in (f"{region}.json", f"{region}.json.gz"):
        path = directory / kind / name
        if path.exists():
            raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
            return cast(list[dict[str, str]], json.loads(raw))  # moto's files: one row per offering
    return None


def _by_type(rows: list[dict[str, str]]) -> dict[str, list[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        if row["InstanceType"] in CATALOG:
            found[row["InstanceType"]].add(row["Location"])
    return {t: sorted(found[t]) for t in sorted(found)}


def _zone_ids_by_name(names: list[dict[str, str]], ids: list[dict[str, str]]) -> dict[str, str]:
    """moto's account's zone name -> zone ID, matched by identical offerings (every type, not only ours)."""

    def sets(rows: list[dict[str, str]]) -> dict[str, frozenset[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for row in rows:
            out[row["Location"]].add(row["InstanceType"])
        return {k: frozenset(v) for k, v in out.items()}

    by_name, by_id = sets(names), sets(ids)
    mapping = {}
    for name, types in sorted(by_name.items()):
        matches = [zone_id for zone_id, other in by_id.items() if other == types]
        if len(matches) == 1:
            mapping[name] = matches[0]
    return mapping


def build(today: str | None = None) -> dict[str, Any]:
    version, directory = moto_resources()
    regions: dict[str, Any] = {}
    missing: list[str] = []
    for region in sorted(REGIONS):
        read = {kind: _read(directory, kind, region) for kind in KINDS}
        rows = {kind: found for kind, found in read.items() if found is not None}
        if len(rows) != len(read):
            missing.append(region)
            continue
        regional = _by_type(rows["region"])
        regions[region] = {
            "types": sorted(regional),
            "zoneIds": _by_type(rows["availability-zone-id"]),
            "zoneNames": _by_type(rows["availability-zone"]),
            "zoneIdByName": _zone_ids_by_name(rows["availability-zone"], rows["availability-zone-id"]),
        }
    return {
        "source": {
            "package": "moto",
            "version": version,
            "path": RESOURCE_DIR + "/{region,availability-zone,availability-zone-id}/<region>.json.gz",
            "what": "EC2 DescribeInstanceTypeOfferings by location type, as shipped in moto",
            "refresh": "python -m inference_platform.catalog.offerings_refresh",
        },
        "date": today or dt.date.today().isoformat(),
        "instanceTypes": sorted(CATALOG),
        "regionsWithoutData": missing,
        "regions": regions,
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inference_platform.catalog.offerings_refresh", description=__doc__)
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
    print(f"wrote {DATA_FILE} from moto {fresh['source']['version']} ({len(fresh['regions'])} regions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
