"""Which xdist worker runs what, and in which order (``make test`` runs ``-n 4 --dist loadgroup`` on 2 cores).

Tests that start real servers, load generators or installs mostly wait (on the stand-ins' sleeps, on servers, on
pip): a third of a core on average. So there are more workers than cores, these start first, longest-bounded
first, and the CPU-bound unit tests fill the cores around them; otherwise the longest ones would start last and end
the run alone. The users of an expensive session fixture go to one worker (an xdist group), which starts it once.
"""

from __future__ import annotations

import pytest

LIVE_MARKERS = ("triton", "edge", "motoserver", "live", "network")
SHARED = {"stack_plan": "stack-plans", "shared_stack": "openai-stack"}
"""Session fixture -> the xdist group of its users."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # tryfirst: pytest-xdist's own hook turns xdist_group marks into scheduling scopes, and it runs first otherwise
    # (its worker plugin registers after the conftests): marks added after it are silently ignored.
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        group = next((g for fixture, g in SHARED.items() if fixture in fixtures), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # A stable sort: the same order on every worker, as xdist requires.
    items.sort(key=_start_order)


def _start_order(item: pytest.Item) -> tuple[bool, float]:
    """Waiting tests first; among them the largest time bound (their ``timeout`` mark) first."""
    waits = any(item.get_closest_marker(name) for name in LIVE_MARKERS)
    bound = item.get_closest_marker("timeout")
    seconds = float(bound.args[0]) if bound is not None and bound.args else 0.0
    return (not waits, -seconds if waits else 0.0)
