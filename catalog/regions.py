"""AWS regions this product can deploy to, with their partition and published Availability Zones.

Pure data: settings validation uses it to reject unknown regions and AZ counts a region cannot give
before anything is registered; the offline plan uses it to answer ``aws:index/getAvailabilityZones``
like AWS would. At deploy time the program still asks AWS and refuses if fewer zones are available
(some accounts see fewer zones, e.g. us-west-1).
"""

from __future__ import annotations

from dataclasses import dataclass

from inference_platform.catalog import offerings

# Zone letters as AWS publishes them for new accounts (AWS "Regions and Zones" pages, 2026).
_ZONE_LETTERS: dict[str, str] = {
    "us-east-1": "abcdef",
    "us-east-2": "abc",
    "us-west-1": "bc",
    "us-west-2": "abcd",
    "ca-central-1": "abd",
    "ca-west-1": "abc",
    "mx-central-1": "abc",
    "sa-east-1": "abc",
    "eu-west-1": "abc",
    "eu-west-2": "abc",
    "eu-west-3": "abc",
    "eu-central-1": "abc",
    "eu-central-2": "abc",
    "eu-north-1": "abc",
    "eu-south-1": "abc",
    "eu-south-2": "abc",
    "il-central-1": "abc",
    "me-south-1": "abc",
    "me-central-1": "abc",
    "af-south-1": "abc",
    "ap-south-1": "abc",
    "ap-south-2": "abc",
    "ap-east-1": "abc",
    "ap-northeast-1": "acd",
    "ap-northeast-2": "abcd",
    "ap-northeast-3": "abc",
    "ap-southeast-1": "abc",
    "ap-southeast-2": "abc",
    "ap-southeast-3": "abc",
    "ap-southeast-4": "abc",
    "ap-southeast-5": "abc",
    "ap-southeast-7": "abc",
    "us-gov-west-1": "abc",
    "us-gov-east-1": "abc",
    "cn-north-1": "abd",
    "cn-northwest-1": "abc",
}

# Account-scoped AZ ids differ per account; these are only used to make offline answers realistic.
_ZONE_ID_PREFIX: dict[str, str] = {"us-east-1": "use1", "us-east-2": "use2", "us-west-1": "usw1", "us-west-2": "usw2"}


@dataclass(frozen=True)
class Region:
    name: str
    partition: str
    zones: tuple[str, ...]

    @property
    def zone_ids(self) -> tuple[str, ...]:
        """Zone IDs of ``zones`` as one real account maps them (moto's, in the vendored offerings: the
        mapping of every account where names are uniform); made up where that has no entry."""
        prefix = _ZONE_ID_PREFIX.get(self.name, self.name.replace("-", "")[:6])
        known = offerings.zone_id_by_name(self.name)
        return tuple(known.get(zone, f"{prefix}-az{i + 1}") for i, zone in enumerate(self.zones))

    @property
    def dns_suffix(self) -> str:
        return "amazonaws.com.cn" if self.partition == "aws-cn" else "amazonaws.com"


def _partition(name: str) -> str:
    if name.startswith("us-gov-"):
        return "aws-us-gov"
    if name.startswith("cn-"):
        return "aws-cn"
    return "aws"


REGIONS: dict[str, Region] = {
    name: Region(name, _partition(name), tuple(f"{name}{letter}" for letter in letters))
    for name, letters in _ZONE_LETTERS.items()
}


def region(name: str) -> Region:
    """The region called ``name``; KeyError if this product does not know it."""
    return REGIONS[name]
