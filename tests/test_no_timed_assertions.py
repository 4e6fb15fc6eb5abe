"""No test asserts how long something took (tests/timed_assertions.py says what counts as one and why).

Speed belongs to ``make bench``: medians and ratios over repetitions, on a machine that says what else it ran.
A test asserts behaviour: what happened, in which order, how many times. The allow-list holds the few tests
where a bound *is* the behaviour under test, each with why; an entry whose test no longer has a timed assertion
is stale and fails too.
"""

from __future__ import annotations

import pytest

from tests.timed_assertions import timed_assertions

ALLOWED = {
    "tests/batch/test_lane_shedding.py::test_a_queued_burst_leaves_interactive_ttft_within_the_dev_slo": (
        "The dev stack's TTFT SLO is the behaviour issue 22 specifies for interactive traffic beside a queued "
        "batch burst: what the burst adds to the same load measured alone in the same run stays within it (seen: p50 "
        "33 ms beside it against the SLO's 1000 ms; the difference, not the absolute figure, since a starved CI "
        "machine made the requests slow before any batch ran)."
    ),
    "tests/batch/test_lane_worker_stops.py::test_a_worker_killed_mid_request_is_redelivered_after_the_visibility_timeout": (
        "Redelivery only after the visibility timeout is SQS's contract under test; a lower bound, which a slow "
        "machine only makes easier to meet."
    ),
    "tests/catalog/test_open_mpi.py::test_open_mpi_4_gives_ranks_the_sigkill_timeout_after_delaying_their_sigterm_by_it": (
        "Pins Open MPI 4.1's own timing (odls_base_sigkill_timeout delays the ranks' SIGTERM, then SIGKILL): the "
        "durations are the upstream fact catalog/open_mpi.py cites."
    ),
    "tests/catalog/test_open_mpi.py::test_open_mpi_5_kills_ranks_within_half_a_second_and_has_no_parameter": (
        "Pins PRRTE's kill step in Open MPI 5 (no parameter to raise it): the duration is the upstream fact."
    ),
    "tests/inferctl/serving/test_openai_local.py::test_a_client_that_leaves_mid_stream_frees_its_slot_within_a_second": (
        "The bound is the behaviour: a departed client's slot is free within a second, where its answer would run "
        "for seconds more; the stand-in tells a cancelled request from a finished one by nothing else."
    ),
    "tests/inferctl/serving/test_openai_local.py::test_a_client_that_leaves_before_a_whole_answer_frees_its_slot_within_a_second": (
        "As above, for a client that leaves a non-streamed answer."
    ),
    "tests/inference_image/test_drain.py::test_a_worker_holds_its_ranks_through_the_drain_up_to_the_budget": (
        "The drain budget is the behaviour: a worker holds while its ranks run, and at most the budget."
    ),
}


@pytest.fixture(scope="module")
def found(repo) -> dict[str, list[str]]:
    """Timed assertions under tests/, by ``path::function`` (one pass over the files for both tests)."""
    by_test: dict[str, list[str]] = {}
    for path in sorted((repo / "tests").rglob("*.py")):
        name = path.relative_to(repo).as_posix()
        for hit in timed_assertions(path.read_text(), name):
            by_test.setdefault(f"{name}::{hit.function}", []).append(f"line {hit.line}: {hit.source}")
    return by_test


def test_no_test_asserts_a_measured_duration_outside_the_allow_list(found):
    offending = {test: lines for test, lines in found.items() if test not in ALLOWED}
    assert offending == {}, (
        "assert behaviour (order, counts, events) instead of durations; speed belongs to make bench "
        "(tests/timed_assertions.py explains)"
    )


def test_every_allow_list_entry_still_has_its_timed_assertion(found):
    assert sorted(set(ALLOWED) - set(found)) == []


@pytest.mark.parametrize(
    "source",
    [
        "def test():\n    t0 = time.monotonic()\n    run()\n    assert time.monotonic() - t0 < 1\n",
        "def test():\n    start = time.perf_counter()\n    took = time.perf_counter() - start\n    assert took <= 2\n",
        "def test():\n    elapsed = measure()\n    assert elapsed == pytest.approx(1.0, abs=0.1)\n",
        "def test():\n    assert result.wall_s < 60\n",
        # A duration measured in a helper and collected into a list reaches the assert through the return.
        "def ttfts():\n    found = []\n    t = time.perf_counter()\n    found.append(time.perf_counter() - t)\n"
        "    return found\n\ndef test():\n    values = ttfts()\n    assert max(values) < 0.5\n",
        # Clock readings collected, then subtracted.
        "def test():\n    arrivals = []\n    arrivals.append(time.monotonic())\n"
        "    assert arrivals[-1] - arrivals[0] >= 0.3\n",
    ],
)
def test_the_check_finds_a_measured_duration(source):
    assert len(list(timed_assertions(source))) == 1


@pytest.mark.parametrize(
    "source",
    [
        # A deadline bounds a wait: the test fails instead of hanging, whatever the machine's speed.
        "def test():\n    deadline = time.monotonic() + 30\n    while busy():\n"
        "        assert time.monotonic() < deadline, 'never done'\n",
        # Counts and order of values derived from durations are no durations.
        "def test():\n    seen = [time.monotonic() - t for t in starts]\n    assert len(seen) >= 3\n",
        "def test():\n    assert [p.elapsed_s for p in seen] == sorted(p.elapsed_s for p in seen)\n",
        # Settings are no measurements.
        "def test():\n    assert config.duration_s <= settings.max_duration_seconds\n",
    ],
)
def test_the_check_leaves_deadlines_counts_and_settings_alone(source):
    assert list(timed_assertions(source)) == []
