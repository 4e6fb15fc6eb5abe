"""The canary gate's decision (inferctl/verify/canary_gate.py): within the bounds of models.canary, always."""

from __future__ import annotations

import pytest

from inference_platform.inferctl.verify.canary_gate import Limits, Sample, decide, percentile

LIMITS = Limits(weight=25, steps=(5, 25, 50, 100), ttft_p95_ms=500, max_error_rate=0.01, max_ttft_ratio=1.25,
                min_requests=100)  # fmt: skip
GOOD = Sample(requests=200, errors=0, ttft_p95_ms=100)


@pytest.mark.parametrize(
    ("canary", "live", "action", "weight", "words"),
    [
        (GOOD, None, "promote", 50, "within every limit"),
        (Sample(200, 3, 100), None, "rollback", 0, "above the error budget"),
        (Sample(200, 0, 600), None, "rollback", 0, "above the SLO"),
        (Sample(200, 0, 130), None, "rollback", 0, "1.25 x the current"),
        (Sample(50, 0, 100), None, "hold", 25, "needs 100"),
        (GOOD, Sample(1000, 50, 100), "rollback", 0, "live: canary errors 50/1000"),
    ],
)
def test_decisions(canary, live, action, weight, words):
    decision = decide(canary, Sample(200, 0, 100), LIMITS, live)
    assert (decision.action, decision.weight) == (action, weight) and words in decision.reason, decision


def test_never_beyond_the_bounds():
    assert decide(GOOD, GOOD, Limits(**{**LIMITS.__dict__, "weight": 100})).action == "complete"
    held = decide(Sample(200, 9, 100), GOOD, Limits(**{**LIMITS.__dict__, "rollback": False}))
    assert (held.action, held.weight) == ("hold", 25) and "rollback is false" in held.reason
    assert decide(GOOD, GOOD, Limits(**{**LIMITS.__dict__, "weight": 0})).weight == 5


def test_percentile():
    assert (
        percentile([], 0.95) == 0 and percentile([1, 2, 3, 4], 0.5) == 2 and percentile(list(range(1, 101)), 0.95) == 95
    )
