"""Where each catalogued instance type is offered: per region, per zone ID, per zone name. Pure data.

Source: AWS's EC2 DescribeInstanceTypeOfferings answers as moto ships them
(``moto/ec2/resources/instance_type_offerings/{region,availability-zone,availability-zone-id}/<region>.json.gz``),
vendored for the catalog's types in ``instance_offerings.json`` with the moto version and the date;
``python -m inference_platform.catalog.offerings_refresh`` rewrites it from the installed moto (``--check``
compares). Example: in us-east-2, trn1.32xlarge is offered only in use2-az3 (us-east-2c).

Zone names and zone IDs: a zone ID (``use1-az4``) is the same place in every account. In the Regions AWS
opened up to November 2012 the names (``us-east-1a``) were mapped to zones independently for each
account (AWS "AZ IDs", docs.aws.amazon.com/global-infrastructure/latest/regions/az-ids.html: "All Regions
introduced after November 2012 use a uniform mapping"; accounts created from November 2025 get the
uniform mapping everywhere). There a name says nothing about the place until the account's own
``DescribeAvailabilityZones`` answer maps it to an ID, so offerings are checked by zone ID: offline as
far as the name-free facts go, at deploy time against the account's mapping (infra/foundation.py).
Elsewhere a name is the same place in every account and moto's per-name answer holds as is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, cast

DATA_FILE: Final = Path(__file__).with_name("instance_offerings.json")
RESOURCE_DIR: Final = "moto/ec2/resources/instance_type_offerings"

# Regions opened up to November 2012 (AWS "AZ IDs": Regions with independently mapped Availability Zones).
INDEPENDENTLY_MAPPED: Final = frozenset(
    {"us-east-1", "us-west-1", "us-west-2", "eu-west-1", "ap-northeast-1", "ap-southeast-1", "ap-southeast-2",
     "sa-east-1", "us-gov-west-1"}
)  # fmt: skip


@lru_cache(maxsize=1)
def data() -> dict[str, Any]:
    """The vendored offerings (``instance_offerings.json``)."""
    return cast(dict[str, Any], json.loads(DATA_FILE.read_text()))  # the vendored file holds one object


def source() -> str:
    """Where the data comes from, for messages: ``moto 5.2.5 <path>, vendored <date>``."""
    src = data()["source"]
    return f"moto {src['version']} {src['path']}, vendored {data()['date']}"


def has_data(region: str) -> bool:
    return region in data()["regions"]


def names_are_account_specific(region: str) -> bool:
    """True where zone names map to places per account, so only zone IDs can be checked offline."""
    return region in INDEPENDENTLY_MAPPED


def offered_in_region(instance_type: str, region: str) -> bool:
    """Whether the region offers the type at all (True when the region has no data: nothing to refuse on)."""
    if not has_data(region):
        return True
    return instance_type in data()["regions"][region]["types"]


def zone_ids_offering(instance_type: str, region: str) -> tuple[str, ...]:
    """The zone IDs of ``region`` that offer ``instance_type`` (empty when none, or no data)."""
    if not has_data(region):
        return ()
    return tuple(data()["regions"][region]["zoneIds"].get(instance_type, ()))


def region_zone_ids(region: str) -> tuple[str, ...]:
    """Every zone ID with offerings for any catalogued type in ``region``."""
    if not has_data(region):
        return ()
    ids: set[str] = set()
    for zones in data()["regions"][region]["zoneIds"].values():
        ids.update(zones)
    return tuple(sorted(ids))


def zone_id_by_name(region: str) -> dict[str, str]:
    """Zone name -> zone ID as moto's account sees them. Every account's mapping where names are uniform;
    one account's (an example) where they are mapped per account."""
    if not has_data(region):
        return {}
    return dict(data()["regions"][region]["zoneIdByName"])


@dataclass(frozen=True)
class Unoffered:
    """One instance type a set of zones does not offer."""

    instance_type: str
    zones: tuple[str, ...]
    """The asked-for zones (names) that do not offer it; all of them when the region does not."""
    zone_ids: tuple[str, ...]
    """Their zone IDs, where known (same order); empty when not."""
    offered_zone_ids: tuple[str, ...]
    """Where the region offers it, by zone ID."""
    offered_zones: tuple[str, ...]
    """Where the region offers it, by the names of the mapping used (empty where that is unknown)."""
    by_count: bool = False
    """Names map to zones per account and none was given: fewer zones offer it than are asked for."""

    def describe(self, region: str) -> str:
        asked = ", ".join(
            f"{z} ({i})" if i else z for z, i in zip(self.zones, self.zone_ids or ("",) * len(self.zones), strict=True)
        )
        if not self.offered_zone_ids:
            return f"{self.instance_type} is not offered in {region} at all ({source()})"
        if self.by_count:
            return (
                f"{self.instance_type} is offered in {region} only in {', '.join(self.offered_zone_ids)} (zone IDs), "
                f"fewer than the {len(self.zones)} zones asked for ({', '.join(self.zones)}); {region} maps zone "
                f"names per account: use the names your account gives those IDs (aws ec2 describe-availability-zones) "
                f"({source()})"
            )
        where = ", ".join(
            f"{n} ({i})" for n, i in zip(self.offered_zones, self.offered_zone_ids, strict=True)
        ) if self.offered_zones else ", ".join(self.offered_zone_ids)  # fmt: skip
        return f"{self.instance_type} is not offered in {asked}; {region} offers it only in {where} ({source()})"


def unoffered(
    instance_types: Iterable[str], region: str, zones: Iterable[str], zone_ids: Mapping[str, str] | None = None
) -> list[Unoffered]:
    """The types that some of ``zones`` (names) do not offer.

    ``zone_ids`` maps the account's zone names to IDs (its DescribeAvailabilityZones answer). Without it,
    names are mapped through the data where names are uniform; where they are mapped per account only what
    holds in every account is checked: the region offers the type, in at least as many zones as asked."""
    zones = tuple(zones)
    if not has_data(region):
        return []
    mapping = dict(zone_ids) if zone_ids is not None else None
    if mapping is None and not names_are_account_specific(region):
        mapping = zone_id_by_name(region)
    out: list[Unoffered] = []
    for instance_type in instance_types:
        offered = zone_ids_offering(instance_type, region)
        names = _names_of(offered, mapping)
        if mapping is None:
            if len(offered) < len(zones):
                out.append(Unoffered(instance_type, zones, (), offered, (), by_count=bool(offered)))
            continue
        # A name the mapping does not know (no data for it) is not judged.
        missing = tuple(z for z in zones if z in mapping and mapping[z] not in offered)
        if missing:
            out.append(Unoffered(instance_type, missing, tuple(mapping.get(z, "") for z in missing), offered, names))
    return out


def _names_of(zone_ids: tuple[str, ...], mapping: Mapping[str, str] | None) -> tuple[str, ...]:
    if mapping is None:
        return ()
    by_id = {v: k for k, v in mapping.items()}
    if not all(i in by_id for i in zone_ids):
        return ()
    return tuple(by_id[i] for i in zone_ids)
