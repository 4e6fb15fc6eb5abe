"""Subnet carving: inside the VPC, disjoint, deterministic, and stable when zones or tiers grow."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inference_platform.planners.cidr import MAX_ZONES, TIERS, CarveError, carve


@st.composite
def layouts(draw):
    vpc_prefix = draw(st.integers(16, 22))
    base = draw(st.sampled_from(["10.0.0.0", "172.16.0.0", "192.168.0.0", "100.64.0.0"]))
    vpc = ipaddress.IPv4Network(f"{base}/{vpc_prefix}", strict=False)
    prefixes = {t: draw(st.integers(vpc_prefix + 3, 28)) for t in TIERS}
    zones = draw(st.integers(1, MAX_ZONES))
    return str(vpc), zones, prefixes


def carved_or_none(vpc, zones, prefixes):
    try:
        return carve(vpc, zones, prefixes)
    except CarveError:
        return None


@given(layouts())
def test_subnets_lie_inside_the_vpc_and_never_overlap(layout):
    vpc, zones, prefixes = layout
    plans = carved_or_none(vpc, zones, prefixes)
    if plans is None:
        return
    network = ipaddress.IPv4Network(vpc)
    subnets = [ipaddress.IPv4Network(p.cidr) for p in plans]
    assert all(s.subnet_of(network) for s in subnets)
    for i, a in enumerate(subnets):
        for b in subnets[i + 1 :]:
            assert not a.overlaps(b), f"{a} overlaps {b}"
    assert len(plans) == zones * len(prefixes)
    assert all(ipaddress.IPv4Network(p.cidr).prefixlen == prefixes[p.tier] for p in plans)


@given(layouts())
def test_same_input_same_output(layout):
    assert carved_or_none(*layout) == carved_or_none(*layout)


@given(layouts())
def test_adding_a_zone_moves_no_existing_subnet(layout):
    vpc, zones, prefixes = layout
    if zones == MAX_ZONES:
        return
    before, after = carved_or_none(vpc, zones, prefixes), carved_or_none(vpc, zones + 1, prefixes)
    if before is None or after is None:
        return
    assert set(before) <= set(after)


def test_enabling_intra_subnets_moves_nothing_because_their_space_is_reserved():
    plans = carve("10.0.0.0/16", 3, {"private": 19, "public": 24, "intra": 26})
    assert [p.cidr for p in plans if p.tier == "private"] == ["10.0.0.0/19", "10.0.32.0/19", "10.0.64.0/19"]
    assert [p.cidr for p in plans if p.tier == "public"] == ["10.0.192.0/24", "10.0.193.0/24", "10.0.194.0/24"]
    assert [p.cidr for p in plans if p.tier == "intra"] == ["10.0.198.0/26", "10.0.198.64/26", "10.0.198.128/26"]
    without_intra = carve("10.0.0.0/16", 3, {"private": 19, "public": 24, "intra": 26})
    assert [p for p in without_intra if p.tier != "intra"] == [p for p in plans if p.tier != "intra"]


def test_a_cidr_too_small_names_the_size_needed():
    with pytest.raises(CarveError, match=r"needs at least a /1[0-9]"):
        carve("10.0.0.0/18", 2, {"private": 19, "public": 24, "intra": 26})


@pytest.mark.parametrize(
    ("zones", "prefixes", "message"),
    [
        (0, {"private": 19}, "zones must be between 1 and 6"),
        (7, {"private": 19}, "zones must be between 1 and 6"),
        (2, {"dmz": 24}, "unknown subnet tiers"),
        (2, {"private": 12}, "must be between /16 and /28"),
    ],
)
def test_bad_arguments_are_refused(zones, prefixes, message):
    with pytest.raises(CarveError, match=message):
        carve("10.0.0.0/16", zones, prefixes)
