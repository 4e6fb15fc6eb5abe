"""Moving code must never change a URN: a changed URN is a replacement (or a delete) in the cloud.

``tests/data/urns/<stack>.txt`` is the sorted URN list of each shipped stack's plan. A change that adds or
removes resources on purpose regenerates the file in the same commit and says so in its message:
``inferctl plan --stack S`` then the sorted ``urn`` fields of ``build/plan/S.json``.
"""

from __future__ import annotations

import difflib

import pytest

from tests.conftest import REPO, STACKS

URNS = REPO / "tests" / "data" / "urns"


@pytest.mark.parametrize("stack", STACKS)
def test_plan_urns_are_exactly_the_recorded_ones(stack, stack_plan):
    recorded = URNS.joinpath(f"{stack}.txt").read_text().split()
    planned = sorted(r.urn for r in stack_plan(stack).run.resources)
    diff = "\n".join(difflib.unified_diff(recorded, planned, "recorded", "planned", lineterm="", n=0))
    assert planned == recorded, f"{stack}: URNs changed (a replacement in the cloud):\n{diff}"
