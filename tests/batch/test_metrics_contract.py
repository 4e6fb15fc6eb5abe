"""The series the cluster side's rules, alerts and dashboard read (components/batch/signals.py) are the ones the
running code exports (batch/metrics.py), with the label values the rules select on."""

from __future__ import annotations

from prometheus_client import REGISTRY

from inference_platform.batch import metrics
from inference_platform.components.batch import signals


def exported() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for family in REGISTRY.collect():
        for sample in family.samples:
            found.setdefault(sample.name, set()).update(sample.labels)
        found.setdefault(family.name, set())
    return found


def test_every_series_the_rules_read_is_exported_with_its_labels():
    metrics.QUEUE_MESSAGES.labels(queue="work", state="visible").set(0)
    metrics.OPEN_REQUESTS.labels(state="total").set(0)
    metrics.BATCHES.labels(status="completed").set(0)
    metrics.QUOTA_REJECTIONS.labels(client="c", kind="tokens")
    series = exported()
    wanted = {
        signals.QUEUE_MESSAGES: {"queue", "state"}, signals.OLDEST_OPEN_BATCH_SECONDS: set(),
        signals.OPEN_REQUESTS: {"state"}, signals.BATCHES: {"status"}, signals.REQUESTS: {"status"},
        signals.WORKER_ERRORS: {"reason"}, signals.SHEDDING: set(), signals.IN_FLIGHT: set(),
        signals.QUOTA_REJECTIONS: {"client", "kind"},
    }  # fmt: skip
    for name, labels in wanted.items():
        assert name in series, f"{name} is read by components/batch/signals.py but batch/metrics.py does not export it"
        assert labels <= series[name], f"{name}: the rules select on {labels}, the code labels {series[name]}"
    assert set(metrics.REQUEST_STATUSES) == {
        "completed",
        "failed",
        "retried",
        "duplicate",
        "cancelled",
        "expired",
        "budget",
    }
