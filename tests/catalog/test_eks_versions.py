"""The EKS version calendar and the pinned add-on versions: what is offered when, and what a cluster gets."""

from __future__ import annotations

import datetime as dt

import pytest

from inference_platform.catalog import eks_versions
from inference_platform.catalog.eks_versions import (
    ADDONS,
    CALENDAR,
    DEFAULT_KUBERNETES_VERSION,
    addon_versions,
    offered_versions,
)


def test_every_version_has_14_months_standard_then_12_months_extended_support():
    for v in CALENDAR:
        assert v.released < v.end_of_standard_support < v.end_of_extended_support, v.version
        standard_months = (v.end_of_standard_support - v.released).days / 30.44
        extended_months = (v.end_of_extended_support - v.end_of_standard_support).days / 30.44
        assert 13.5 <= standard_months <= 14.5 and 11.5 <= extended_months <= 12.5, v.version


@pytest.mark.parametrize(
    ("day", "offered"),
    [
        ("2026-02-01", ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35")),
        ("2026-12-02", ("1.32", "1.33", "1.34", "1.35", "1.36")),  # 1.31's extended support ended 2026-11-26
        ("2027-08-01", ("1.34", "1.35", "1.36")),  # 1.33 left extended support on 2027-07-29
    ],
)
def test_offered_versions_follow_the_calendar(day, offered):
    assert offered_versions(dt.date.fromisoformat(day)) == offered


def test_the_default_version_is_offered_and_in_standard_support_today_and_pinned():
    today = dt.date(2026, 12, 2)
    assert DEFAULT_KUBERNETES_VERSION in offered_versions(today)
    assert eks_versions.version(DEFAULT_KUBERNETES_VERSION).standard_on(today)
    assert set(addon_versions(DEFAULT_KUBERNETES_VERSION)) == set(ADDONS)


def test_every_pin_is_an_exact_eks_build_and_kube_proxy_matches_its_minor_version():
    for kubernetes, pins in eks_versions.PINNED_ADDON_VERSIONS.items():
        assert set(pins) == set(ADDONS)
        assert all(eks_versions.ADDON_VERSION_PATTERN.match(v) for v in pins.values())
        assert pins["kube-proxy"].startswith(f"v{kubernetes}.")


def test_overrides_win_and_a_version_without_pins_needs_every_addon():
    assert addon_versions("1.36", {"vpc-cni": "v1.23.1-eksbuild.1"})["vpc-cni"] == "v1.23.1-eksbuild.1"
    with pytest.raises(KeyError, match="vpc-cni"):
        addon_versions("1.34", {"coredns": "v1.12.4-eksbuild.1"})
    full = {a: "v1.0.0-eksbuild.1" for a in ADDONS}
    assert addon_versions("1.34", full) == full
