"""A running load test reports where it is (``inferctl loadtest run`` and ``verify`` print it), and the
wall-time bound holds while it does."""

from __future__ import annotations

import subprocess
import sys
import time

from inference_platform.loadgen import runner
from inference_platform.processes import die_with_parent


def _sleeper(seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"], preexec_fn=die_with_parent())


def test_a_running_load_reports_the_requests_recorded_so_far(monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 0.2)
    records = tmp_path / "requests.jsonl"
    records.write_text('{"n": 1}\n{"n": 2}\n')
    seen: list[runner.Progress] = []
    started = time.monotonic()
    assert runner._wait(_sleeper(1.0), started + 60, started, 30.0, records, seen.append) is False
    assert seen and all(p.requests == 2 and p.expected_s == 30.0 for p in seen)
    assert [p.elapsed_s for p in seen] == sorted(p.elapsed_s for p in seen)
    assert "requests recorded" in seen[0].line() and "of ~30 s" in seen[0].line()


def test_the_wall_bound_holds_with_progress_on(monkeypatch, tmp_path):
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 0.2)
    lead = _sleeper(30)
    try:
        started = time.monotonic()
        assert runner._wait(lead, started + 0.5, started, 1.0, tmp_path / "none.jsonl", lambda p: None) is True
        assert lead.poll() is None  # still running: run() stops it
    finally:
        lead.kill()
        lead.wait()


def test_without_a_callback_it_waits_silently(tmp_path):
    started = time.monotonic()
    assert runner._wait(_sleeper(0.2), started + 30, started, 1.0, tmp_path / "none.jsonl", None) is False
