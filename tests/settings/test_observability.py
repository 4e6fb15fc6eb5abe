"""The observability settings: defaults, and each bad value named by its key."""

from __future__ import annotations

import pytest

from tests.settings.test_inference import load, problems


def test_defaults():
    cfg = load({}).observability
    assert cfg.enabled and cfg.retention == "15d" and cfg.prometheus_storage_gib == 100
    assert cfg.alerts.utilisation_floor == 0.7 and cfg.alerts.waste_for == "30m"


@pytest.mark.parametrize(
    ("observability", "path", "words"),
    [
        ({"retention": "15 days"}, "observability.retention", ["15d"]),
        ({"prometheusStorageGib": 5}, "observability.prometheusStorageGib", ["greater than or equal to 10"]),
        ({"alerts": {"kvCacheRatio": 1.2}}, "observability.alerts.kvCacheRatio", ["less than or equal to 1"]),
        ({"alerts": {"wasteFor": "soon"}}, "observability.alerts.wasteFor", ["30m"]),
        ({"alerts": {"edge5xxRatio": 0}}, "observability.alerts.edge5xxRatio", ["greater than 0"]),
        ({"enabled": False}, "observability.enabled", ["KEDA"]),
    ],
)
def test_each_bad_value_names_its_key(observability, path, words):
    found = problems({"observability": observability})
    assert path in found, found
    for word in words:
        assert word in found[path]


def test_the_pipeline_may_be_off_without_autoscaling():
    assert not load({"observability": {"enabled": False}, "autoscaling": {"enabled": False}}).observability.enabled
