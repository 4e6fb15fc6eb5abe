"""Where the suite's time goes: seconds per area (a test file's folder, e.g. tests/inferctl/serving), printed at
the end of every run, with the CPU seconds they used (this process and the children it reaped: the servers),
and each xdist worker's busy time against the wall time.

The next change that slows ``make test`` shows up here by area, before anyone needs ``--durations``. Under
pytest-xdist the controller sums the reports its workers send (setup + call + teardown of each test); a
worker's busy time close to the wall time while the other's is far below means the groups are unbalanced
(tests/conftest.py decides who runs what). An area whose CPU seconds are far below its seconds mostly waits
(servers, sleeps, subprocesses): it can run beside others without slowing them.

``PYTEST_TIMELINE=<file>`` also writes one JSON line per test phase (node id, worker, start, stop, and for the
teardown line the test's CPU seconds), to see which tests ran side by side.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from pathlib import PurePosixPath
from typing import Any

import pytest

CPU_KEY = "cpu_s"
"""The user property (on the teardown report) carrying a test's CPU seconds from its worker to the controller."""
AREA_DEPTH = 3
"""tests/<package>/<subpackage>: deep enough to tell tests/inferctl/serving from tests/inferctl/verify."""


def area_of(nodeid: str) -> str:
    """The folder of the test's file, at most AREA_DEPTH parts deep (``tests`` for top-level files)."""
    folder = PurePosixPath(nodeid.split("::", 1)[0]).parent
    return "/".join(folder.parts[:AREA_DEPTH]) or "."


class AreaReport:
    def __init__(self, timeline: str | None) -> None:
        self.started = time.time()
        self.seconds: dict[str, float] = defaultdict(float)
        self.tests: dict[str, set[str]] = defaultdict(set)
        self.busy: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self._timeline = open(timeline, "w", encoding="utf-8") if timeline else None  # noqa: SIM115 - closed at exit

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        area = area_of(report.nodeid)
        self.seconds[area] += report.duration
        self.tests[area].add(report.nodeid)
        node = getattr(report, "node", None)
        worker = node.gateway.id if node is not None else "main"
        self.busy[worker] += report.duration
        cpu = dict(report.user_properties).get(CPU_KEY) if report.when == "teardown" else None
        if cpu is not None:
            self.cpu[area] += cpu
        if self._timeline is not None:
            line = {"nodeid": report.nodeid, "when": report.when, "worker": worker, "start": report.start,
                    "stop": report.stop, "outcome": report.outcome, "cpu_s": cpu}  # fmt: skip
            self._timeline.write(json.dumps(line) + "\n")

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._timeline is not None:
            self._timeline.close()
        if not self.seconds:
            return
        wall = time.time() - self.started
        write = terminalreporter.write_line
        terminalreporter.section("time per area")
        write(f"{'seconds':>10}  {'CPU s':>7}  {'tests':>5}  area")
        for area, seconds in sorted(self.seconds.items(), key=lambda item: -item[1]):
            write(f"{seconds:8.1f} s  {self.cpu[area]:7.1f}  {len(self.tests[area]):5d}  {area}")
        total, cpu, count = sum(self.seconds.values()), sum(self.cpu.values()), sum(map(len, self.tests.values()))
        write(f"{total:8.1f} s  {cpu:7.1f}  {count:5d}  total (test time)")
        workers = ", ".join(f"{w} {s:.0f} s" for w, s in sorted(self.busy.items()))
        write(f"{wall:8.1f} s  wall; busy per worker: {workers}")


_CPU_AT_SETUP = pytest.StashKey[float]()


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_CPU_AT_SETUP] = _cpu_seconds()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when == "teardown" and _CPU_AT_SETUP in item.stash:
        # In the worker that ran the test; the property travels to the controller with the report.
        report.user_properties.append((CPU_KEY, round(_cpu_seconds() - item.stash[_CPU_AT_SETUP], 3)))
    return report


def pytest_configure(config: pytest.Config) -> None:
    # Only where the reports end up: the controller under xdist (workers forward theirs), or a plain run.
    if hasattr(config, "workerinput"):
        return
    config.pluginmanager.register(AreaReport(os.environ.get("PYTEST_TIMELINE")), "area-report")
