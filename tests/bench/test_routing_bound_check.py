"""The routing trace's check of Envoy's bounded-load rule (bench.routing.Pick), on access-log lines written by hand:
it catches a hash with no bound, and does not blame Envoy for the requests it cannot count (those still waiting for
an upstream connection, which Envoy leaves out of a replica's active requests until they are attached)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.routing import Outcome, PartResult, replica_load
from inference_platform.catalog.edge_routing import bounded_load_slots, load_bound

REPLICAS = 3
PERCENT = 150
T0 = 1_800_000_000.0


def _line(upstream: str, *, start_ms: float, received_ms: float, attached_ms: float, ends_ms: float) -> str:
    """One access-log line in the local edge's fields (inferctl.serving.edge_envoy._access_log), times from T0."""
    return json.dumps(
        {
            "upstream": upstream,
            "start_s": f"{T0 + start_ms / 1000:.6f}",
            "received_us": str(int((received_ms - start_ms) * 1000)),
            "upstream_wait_us": str(int((attached_ms - start_ms) * 1000)),
            "upstream_us": str(int((ends_ms - attached_ms) * 1000)),
        }
    )


def _result(tmp_path: Path, lines: list[str]) -> PartResult:
    log = tmp_path / "access.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    per_replica, peaks, picks = replica_load(log)
    return PartResult([Outcome(200, 1, 0, 1.0)] * len(lines), 1.0, per_replica, peaks, picks)


def test_the_slots_follow_envoys_formula() -> None:
    # total_slots = ((overall + 1) * 150 + 99) // 100, split over 3 replicas, rounded up, at least 1.
    assert [bounded_load_slots(overall_active=n, replicas=3, load_bound_percent=150) for n in range(6)] == [
        1,
        1,
        2,
        2,
        3,
        3,
    ]
    assert load_bound(in_flight_elsewhere=5, replicas=3, load_bound_percent=150) == 4


def test_a_hash_with_no_bound_is_caught(tmp_path: Path) -> None:
    # Six requests of one hot prefix, 10 ms apart, each attached 1 ms after its body and running for a second, all
    # on one replica: from the fourth pick on the replica holds more than its slots.
    lines = [
        _line("a", start_ms=10 * i, received_ms=10 * i + 0.5, attached_ms=10 * i + 1.5, ends_ms=1000 + 10 * i)
        for i in range(6)
    ]
    result = _result(tmp_path, lines)
    over = result.picks_over_bound(replicas=REPLICAS, load_bound_percent=PERCENT)
    assert [(p.host_active, p.overall_active) for p in over] == [(3, 3), (4, 4), (5, 5)]
    assert result.peak_in_flight == {"a": 6}


def test_requests_waiting_for_a_connection_are_not_blamed_on_the_bound(tmp_path: Path) -> None:
    # A burst on cold connections: six picks within half a millisecond, each waiting 5 ms for its own connection.
    # Envoy saw none of the others as active at any pick, so all six on one replica breaks no rule, though the peak
    # passes load_bound.
    lines = [
        _line("a", start_ms=0.1 * i, received_ms=0.1 * i + 0.05, attached_ms=5 + 0.1 * i, ends_ms=500) for i in range(6)
    ]
    result = _result(tmp_path, lines)
    assert (
        result.peak_in_flight == {"a": 6}
        and load_bound(in_flight_elsewhere=5, replicas=REPLICAS, load_bound_percent=PERCENT) < 6
    )
    assert result.picks_over_bound(replicas=REPLICAS, load_bound_percent=PERCENT) == []


def test_a_bounded_spill_passes_and_a_pick_counts_only_what_ran_across_its_window(tmp_path: Path) -> None:
    # Three on replica a, then the hot prefix spills to b; a request that ended before the fifth request's body was
    # in, and one attached after its pick, count for neither side of the rule.
    lines = [
        _line("a", start_ms=10 * i, received_ms=10 * i + 0.5, attached_ms=10 * i + 1.5, ends_ms=1000) for i in range(3)
    ]
    lines += [
        _line("b", start_ms=30, received_ms=30.5, attached_ms=31.5, ends_ms=1000),
        _line("c", start_ms=0, received_ms=0.5, attached_ms=1.0, ends_ms=39.0),
        _line("a", start_ms=40, received_ms=40.5, attached_ms=41.5, ends_ms=1000),
        _line("b", start_ms=41.6, received_ms=41.7, attached_ms=42.0, ends_ms=1000),
    ]
    result = _result(tmp_path, lines)
    fifth = result.picks[5]
    # At the pick of a's fourth request: a held three, the cluster four (a's three and b's one); c had ended.
    assert (fifth.host, fifth.host_active, fifth.overall_active) == ("a", 3, 4)
    assert bounded_load_slots(overall_active=4, replicas=REPLICAS, load_bound_percent=PERCENT) == 3
    assert result.picks_over_bound(replicas=REPLICAS, load_bound_percent=PERCENT) == []
    assert result.per_replica == {"a": 4, "b": 2, "c": 1}
