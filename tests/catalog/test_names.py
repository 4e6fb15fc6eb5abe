"""fit_name (issue 17 §5): names that fit are untouched; longer ones keep their start and a hash of the
whole name, so long names sharing their start stay distinct, and none ends on '-'."""

from __future__ import annotations

import re

import pytest

from inference_platform.catalog.names import HASH_LENGTH, fit_name, name_hash


@pytest.mark.parametrize("name", ["inference-platform-dev", "inference-platform-prod-rl", "x" * 40])
def test_a_name_that_fits_is_returned_unchanged(name):
    assert fit_name(name, 40) == name


def test_a_long_name_keeps_its_start_and_a_stable_hash_of_all_of_it():
    name = "inference-platform-production-us-east-1a-blue"
    fitted = fit_name(name, 40)
    # Pinned: the hash is SHA-256, not Python's per-process hash(); a changed value renames resources.
    assert fitted == "inference-platform-production-us-433ba2"
    assert fitted.endswith(name_hash(name)) and len(name_hash(name)) == HASH_LENGTH
    assert fit_name(name, 40) == fitted


def test_names_sharing_their_first_40_characters_get_different_names():
    blue, green = "inference-platform-production-us-east-1a-blue", "inference-platform-production-us-east-1a-green"
    assert blue[:40] == green[:40]
    assert fit_name(blue, 40) != fit_name(green, 40)


_HYPHEN_TRAPS = [
    "inference-platform-production-us-east-1-rl",  # the 40th character is '-'
    "a" * 30 + "-" * 10 + "b" * 10,
    "production-us-east-1----------------------------------x",
]


@pytest.mark.parametrize(
    ("name", "limit"),
    [(name, limit) for name in _HYPHEN_TRAPS for limit in (8, 20, 33, 34, 40) if len(name) > limit],
)
def test_a_fitted_name_never_ends_on_a_hyphen_nor_makes_a_double_one(name, limit):
    fitted = fit_name(name, limit)
    assert len(fitted) <= limit
    assert not fitted.endswith("-") and not fitted.startswith("-")
    assert "--" not in fitted[-(HASH_LENGTH + 2) :]
    assert re.fullmatch(r"[0-9a-f]{6}", fitted[-HASH_LENGTH:])


def test_a_limit_without_room_for_the_hash_is_a_programming_error():
    with pytest.raises(ValueError, match="no room"):
        fit_name("anything-long", HASH_LENGTH + 1)
