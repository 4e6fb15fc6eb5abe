"""Deterministic subnet carving: the same VPC CIDR and sizes always give the same subnets.

Each tier (private, public, intra) owns a fixed region of the VPC with a slot per possible zone
(``reserve``), in a fixed order. Adding a zone or enabling the intra tier later therefore never moves
an existing subnet: a moved subnet is a replaced subnet, and replacing a subnet under a running EKS
cluster takes the cluster down.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TIERS: tuple[str, ...] = ("private", "public", "intra")
MAX_ZONES = 6  # the most AZs any AWS region offers (us-east-1)


def covered_world(cidrs: Iterable[str]) -> list[str]:
    """The whole address spaces (``0.0.0.0/0``, ``::/0``) that ``cidrs`` cover together, e.g. through
    ``0.0.0.0/1`` + ``128.0.0.0/1``; unreadable entries are ignored (their own check reports them)."""
    by_version: dict[int, list[ipaddress.IPv4Network | ipaddress.IPv6Network]] = {4: [], 6: []}
    for cidr in cidrs:
        try:
            network = ipaddress.ip_network(str(cidr).strip(), strict=False)
        except ValueError:
            continue
        by_version[network.version].append(network)
    return [
        str(collapsed[0])
        for networks in by_version.values()
        if networks and len(collapsed := list(ipaddress.collapse_addresses(networks))) == 1
        if collapsed[0].prefixlen == 0
    ]


class CarveError(ValueError):
    """The VPC CIDR cannot hold the requested subnets."""


@dataclass(frozen=True, order=True)
class SubnetPlan:
    tier: str
    zone_index: int
    cidr: str


def carve(
    vpc_cidr: str,
    zones: int,
    prefixes: Mapping[str, int],
    reserve: int = MAX_ZONES,
) -> list[SubnetPlan]:
    """Subnets for ``zones`` zones of every tier in ``prefixes`` (tier -> prefix length).

    Tiers absent from ``prefixes`` get no region at all, so callers that may enable a tier later
    should always pass its size (the network component does).
    """
    vpc = ipaddress.IPv4Network(vpc_cidr, strict=True)
    if not 1 <= zones <= reserve:
        raise CarveError(f"zones must be between 1 and {reserve}, got {zones}")
    unknown = set(prefixes) - set(TIERS)
    if unknown:
        raise CarveError(f"unknown subnet tiers {sorted(unknown)}; known: {', '.join(TIERS)}")
    for tier, prefix in prefixes.items():
        if not vpc.prefixlen <= prefix <= 28:
            raise CarveError(f"{tier} subnets /{prefix} must be between /{vpc.prefixlen} and /28")

    layout = _layout(int(vpc.network_address), prefixes, reserve)
    end = int(vpc.network_address) + vpc.num_addresses
    if layout.end > end:
        needed = 32 - math.ceil(math.log2(layout.end - int(vpc.network_address)))
        raise CarveError(
            f"{vpc_cidr} is too small: {', '.join(f'{t} /{p}' for t, p in prefixes.items())} "
            f"with room for {reserve} zones needs at least a /{needed}"
        )
    return [
        SubnetPlan(tier, i, str(ipaddress.IPv4Network((layout.starts[tier] + i * _size(prefix), prefix))))
        for tier, prefix in _ordered(prefixes)
        for i in range(zones)
    ]


@dataclass(frozen=True)
class _Layout:
    starts: dict[str, int]
    end: int


def _layout(base: int, prefixes: Mapping[str, int], reserve: int) -> _Layout:
    cursor = base
    starts = {}
    for tier, prefix in _ordered(prefixes):
        size = _size(prefix)
        cursor = -(-cursor // size) * size  # align up: a subnet must start on its own boundary
        starts[tier] = cursor
        cursor += reserve * size
    return _Layout(starts, cursor)


def _ordered(prefixes: Mapping[str, int]) -> list[tuple[str, int]]:
    return [(t, prefixes[t]) for t in TIERS if t in prefixes]


def _size(prefix: int) -> int:
    return 1 << (32 - prefix)
