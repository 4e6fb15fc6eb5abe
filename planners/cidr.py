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
from typing import Final

TIERS: tuple[str, ...] = ("private", "public", "intra")
MAX_ZONES = 6  # the most AZs any AWS region offers (us-east-1)


# What "the internet" means for a set of allowed source CIDRs: more public addresses than one /8 of IPv4
# (16,777,216, the largest block any single organisation holds) or one /16 of IPv6 (larger than any RIR
# allocation to one network). A set past that is judged like 0.0.0.0/0, whether it is written as
# 0.0.0.0/1 + 128.0.0.0/1 (all of it) or 0.0.0.0/1 + 128.0.0.0/2 (75% of it).
MAX_PUBLIC_ADDRESSES: Final[Mapping[int, int]] = {4: 1 << 24, 6: 1 << 112}
WORLD: Final[Mapping[int, str]] = {4: "0.0.0.0/0", 6: "::/0"}
# Addresses that are not on the public internet: the IANA special-purpose registries (RFC 6890 and
# successors: this-network, RFC 1918, CGNAT, loopback, link-local, IETF protocol, documentation,
# benchmarking, 6to4 relay, multicast, reserved); for IPv6 everything outside global unicast 2000::/3,
# and the documentation prefix inside it.
NON_PUBLIC: Final[Mapping[int, tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]]] = {
    # One IP version per call (the table is keyed by it), which the union of the two network types cannot say.
    version: tuple(ipaddress.collapse_addresses(ipaddress.ip_network(c) for c in cidrs))  # type: ignore[type-var]  # see above
    for version, cidrs in {
        4: ("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
            "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
            "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4"),
        6: ("::/3", "4000::/2", "8000::/1", "2001:db8::/32"),
    }.items()
}  # fmt: skip


def internet_wide(cidrs: Iterable[str]) -> list[str]:
    """What of the internet ``cidrs`` open together, one entry per IP version past
    ``MAX_PUBLIC_ADDRESSES``: the whole space (``0.0.0.0/0``, ``::/0``) when they collapse to it, else
    e.g. ``3,221,225,472 public IPv4 addresses (more than a /8)``. Empty when the set names client ranges."""
    networks = _networks(cidrs)
    out = []
    for version, found in networks.items():
        collapsed = list(ipaddress.collapse_addresses(found)) if found else []  # type: ignore[type-var]  # one version
        count = sum(_public(n) for n in collapsed)
        if collapsed and collapsed[0].prefixlen == 0:
            out.append(WORLD[version])
        elif count > MAX_PUBLIC_ADDRESSES[version]:
            limit = "/8" if version == 4 else "/16"
            out.append(f"{count:,} public IPv{version} addresses (more than a {limit})")
    return out


def _networks(cidrs: Iterable[str]) -> dict[int, list[ipaddress.IPv4Network | ipaddress.IPv6Network]]:
    by_version: dict[int, list[ipaddress.IPv4Network | ipaddress.IPv6Network]] = {4: [], 6: []}
    for cidr in cidrs:
        try:
            network = ipaddress.ip_network(str(cidr).strip(), strict=False)
        except ValueError:
            continue
        by_version[network.version].append(network)
    return by_version


def _public(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
    # NON_PUBLIC blocks are disjoint and two CIDRs either nest or miss: subtracting nested blocks is exact.
    count = network.num_addresses
    for block in NON_PUBLIC[network.version]:
        if network.subnet_of(block):  # type: ignore[arg-type]  # one version: NON_PUBLIC[network.version]
            return 0
        if block.subnet_of(network):  # type: ignore[arg-type]  # as above
            count -= block.num_addresses
    return count


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
