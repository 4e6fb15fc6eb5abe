"""Jobs are bounded: each missing bound is a violation; a bounded Job passes."""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

BOUNDED = {"backoffLimit": 1, "activeDeadlineSeconds": 3600, "ttlSecondsAfterFinished": 600}
TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i@sha256:" + "a" * 64}]}}


def _job(spec):
    return lambda: k8s.batch.v1.Job("j", metadata={"name": "j", "namespace": "x"}, spec={**spec, "template": TEMPLATE})


def test_a_bounded_job_passes(violations):
    assert violations(_job(BOUNDED), "jobs-bounded") == []


@pytest.mark.parametrize(
    ("drop", "change", "expected"),
    [
        ("backoffLimit", {}, "spec.backoffLimit is unset"),
        (None, {"backoffLimit": 50}, "spec.backoffLimit is 50: at most 10"),
        ("activeDeadlineSeconds", {}, "spec.activeDeadlineSeconds is unset"),
        ("ttlSecondsAfterFinished", {}, "spec.ttlSecondsAfterFinished is unset"),
    ],
)
def test_each_missing_bound_is_a_violation(violations, drop, change, expected):
    spec = {k: v for k, v in BOUNDED.items() if k != drop} | change
    (found,) = violations(_job(spec), "jobs-bounded")
    assert found.message.startswith(expected)
