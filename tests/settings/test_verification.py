"""The ``verification`` section: defaults, each bad value named by its key, and the checks that need
the serving section."""

from __future__ import annotations

import pytest

from inference_platform.settings import SettingsError, load_settings

TAGS = {"owner": "team", "costCenter": "cc-1"}


def load(verification, serving=None):
    values = {"tags": TAGS, "verification": verification}
    if serving is not None:
        values["serving"] = serving
    return load_settings(values, project="p", stack="dev", region="us-west-2")


def problems(verification, serving=None):
    with pytest.raises(SettingsError) as err:
        load(verification, serving)
    return {p.path: p.message for p in err.value.problems}


def test_defaults():
    v = load({}).verification
    assert (v.enabled, v.concurrency_per_replica, v.duration_seconds, v.max_duration_seconds) == (False, None, 60, 600)
    assert (v.isl.mean, v.osl.mean, v.structured_share, v.prometheus_url) == (512, 128, 0.1, None)
    assert (v.slo.min_goodput, v.slo.max_error_rate, v.slo.min_gpu_utilization) == (0.9, 0.01, 0.7)


@pytest.mark.parametrize(
    ("verification", "path", "words"),
    [
        ({"concurrencyPerReplica": 0}, "verification.concurrencyPerReplica", "greater than or equal to 1"),
        ({"durationSeconds": 700}, "verification.durationSeconds", "above maxDurationSeconds (600)"),
        ({"slo": {"minGoodput": 1.5}}, "verification.slo.minGoodput", "less than or equal to 1"),
        ({"slo": {"itlP95Ms": 0}}, "verification.slo.itlP95Ms", "greater than 0"),
        ({"structuredShare": -0.1}, "verification.structuredShare", "greater than or equal to 0"),
        ({"isl": {"spread": 3}}, "verification.isl.mean", "required"),
        ({"durationSecs": 5}, "verification.durationSecs", "did you mean 'durationSeconds'"),
    ],
)
def test_bad_values_name_their_key(verification, path, words):
    found = problems(verification)
    assert path in found and words in found[path], found


def test_prompts_must_fit_the_engine():
    found = problems({"isl": {"mean": 4000, "spread": 100}}, serving={"maxInputLen": 4096})
    assert "exceeds serving.maxInputLen (4096)" in found["verification.isl"]


def test_the_verification_image_is_its_own_and_production_pins_it_by_digest():
    """Issue 28 R1: the Job and the load test run inference_image/verification/Dockerfile's image."""
    image = load({}).verification.image
    assert (image.repository, image.tag, image.digest) == ("verification", None, None)
    assert not load({}).verification.has_image and load({"image": {"tag": "1"}}).verification.has_image
    assert (
        "expected an ECR repository name"
        in problems({"image": {"repository": "Bad Name"}})["verification.image.repository"]
    )
    with pytest.raises(SettingsError) as err:
        load_settings(
            {"tags": TAGS, "environment": "production", "verification": {"image": {"tag": "2026.12.1"}}},
            project="p",
            stack="prod",
            region="us-west-2",
        )
    found = {p.path: p.message for p in err.value.problems}
    assert "by digest" in found["verification.image.digest"]
