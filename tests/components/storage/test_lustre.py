"""FSx for Lustre facts: throughput tiers per deployment type and PERSISTENT_2 capacity steps."""

from __future__ import annotations

import pytest

from inference_platform.catalog.lustre import THROUGHPUT_MB_S_PER_TIB, capacity_problem, throughput_problem


@pytest.mark.parametrize("throughput", THROUGHPUT_MB_S_PER_TIB["PERSISTENT_2"])
def test_persistent_2_tiers_are_accepted(throughput):
    assert throughput_problem("PERSISTENT_2", throughput) is None


@pytest.mark.parametrize(
    ("deployment", "throughput"),
    [("PERSISTENT_2", 200), ("PERSISTENT_2", 50), ("PERSISTENT_1", 125), ("PERSISTENT_2", 0)],
)
def test_a_tier_the_deployment_type_does_not_offer_is_named_with_the_offer(deployment, throughput):
    problem = throughput_problem(deployment, throughput)
    assert problem is not None and f"got {throughput}" in problem
    assert ", ".join(map(str, THROUGHPUT_MB_S_PER_TIB[deployment])) in problem


def test_an_unknown_deployment_type_is_named():
    assert "SCRATCH_9" in (throughput_problem("SCRATCH_9", 125) or "")


@pytest.mark.parametrize(
    ("gib", "ok"),
    [(1200, True), (2400, True), (4800, True), (72000, True), (0, False), (1201, False), (3600, False), (-2400, False)],
)
def test_persistent_2_capacity_is_1200_or_a_multiple_of_2400(gib, ok):
    assert (capacity_problem(gib) is None) is ok
