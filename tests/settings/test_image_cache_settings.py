"""coldStart.imagePull cached and coldStart.imageCache: bad or contradicting values exit 2 naming the key, the value
and what is allowed; the model counts the cache only as it takes effect (fast snapshot restore: no pull; an
initialization rate: the unpacked image at that rate)."""

from __future__ import annotations

import pytest

from inference_platform.catalog import image_sizes
from inference_platform.settings import derived
from tests.settings.test_cold_start import _problems
from tests.settings.test_inference import load

CACHE = {"snapshotId": "snap-0a1b2c3d4e5f60718", "sizeGib": 100}


def _cold(**cold):
    return {"coldStart": {"downloadConcurrency": 32, **cold}}


@pytest.mark.parametrize(
    ("cold", "key", "words"),
    [
        ({"imagePull": "cached"}, "coldStart.imagePull", "without coldStart.imageCache"),
        ({"imagePull": "parallel", "imageCache": CACHE}, "coldStart.imageCache", "only with coldStart.imagePull cached"),
        ({"imagePull": "cached", "imageCache": {**CACHE, "snapshotId": "snap-XYZ"}}, "coldStart.imageCache.snapshotId",
         "'snap-XYZ'"),
        ({"imagePull": "cached", "imageCache": {**CACHE, "initializationRateMiBps": 200}},
         "coldStart.imageCache.initializationRateMiBps", "overrides it"),
        ({"imagePull": "cached", "imageCache": {**CACHE, "fastSnapshotRestore": False}},
         "coldStart.imageCache.fastSnapshotRestore", "no published rate"),
        ({"imagePull": "cached", "imageCache": {**CACHE, "sizeGib": 60}}, "coldStart.imageCache.sizeGib", "at least 100"),
        ({"imagePull": "cached", "imageCache": {**CACHE, "sizeGib": 10}}, "coldStart.imageCache.sizeGib",
         "greater than or equal to 20"),
        ({"imagePull": "cached", "imageCache": {**CACHE, "initializationRateMiBps": 500, "fastSnapshotRestore": False}},
         "coldStart.imageCache.initializationRateMiBps", "less than or equal to 300"),
    ],
)  # fmt: skip
def test_bad_cache_settings_exit_2_naming_the_key(cold, key, words):
    found = [p for p in _problems(_cold(**cold)) if p.path.startswith("coldStart")]
    assert [p.path for p in found] == [key], found
    assert words in found[0].message


def test_an_initialization_rate_counts_every_block_of_the_snapshot_at_that_rate():
    rated = {**CACHE, "fastSnapshotRestore": False, "initializationRateMiBps": 300}
    result = derived.cold_start_model(load(_cold(imagePull="cached", imageCache=rated), "prod"))
    (pull,) = [p for p in result.new if p.name == "image pull"]
    # Every block the snapshot holds (the unpacked image and the layers ctr keeps: 75 GiB), at that rate: 256 s.
    assert pull.seconds == pytest.approx(image_sizes.pull_need_gib(image_sizes.SERVING_GPU_IMAGE_GIB) * 1024 / 300)
    assert round(pull.seconds) == 256 and "300 MiB/s" in pull.source and result.inputs.cache_init_mib_s == 300
    # A rate alone does not bring prod under launch + 3 min; fast snapshot restore does.
    assert result.after_launch_s > 180
