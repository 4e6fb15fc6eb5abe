"""Policies are judged on resources recorded by the same engine as the plan, so a passing/failing
fixture here is exactly what `pulumi preview --policy-pack` would see."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from inference_platform.offline_plan.engine import run_function
from inference_platform.offline_plan.policy_runner import Violation, evaluate
from inference_platform.policies.pack import POLICIES

BY_NAME = {p.name: p for p in POLICIES}


@pytest.fixture
def violations() -> Callable[..., list[Violation]]:
    def judge(program: Callable[[], object], policy: str, config: dict | None = None) -> list[Violation]:
        resources = run_function(program).resources
        return evaluate(resources, [BY_NAME[policy]], config={policy: config} if config else None)

    return judge
