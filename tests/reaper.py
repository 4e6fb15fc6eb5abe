"""Nothing a test run starts outlives it.

Three layers, each for what the one before cannot do:

1. Tests stop what they start (fixtures, ``stop_group``): the server's whole process group, SIGTERM then SIGKILL.
2. A process killed from outside (SIGKILL of a pytest worker, the OOM killer) runs no teardown. Every child that
   is started with ``preexec_fn=die_with_parent()`` (inference_platform/processes.py; test_processes_die_with_parent.py
   holds every Popen to it) then gets a SIGTERM from the kernel, and stops its own children in turn.
3. What still survives (a grandchild whose parent died by SIGKILL, a server that ignores SIGTERM) carries the
   run's marker in its environment (tests/run_processes.py): at the end of the session this plugin waits a moment,
   SIGKILLs whatever of the run is left, names it, and fails the run, since a leak is a defect of some test.
   CI checks the same marker after ``make test`` (.ci/run), in case the session itself was killed.
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.run_processes import RUN_ENV, RunProcess, ancestors, describe, kill, wait_gone

GRACE_ENV = "INFERENCE_PLATFORM_REAPER_GRACE_SECONDS"
GRACE_SECONDS = 10.0
"""How long processes still being stopped at the session's end get before they count as left behind (default;
``$INFERENCE_PLATFORM_REAPER_GRACE_SECONDS`` overrides, e.g. for a run that leaks on purpose)."""


class Reaper:
    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.reaped: list[RunProcess] = []

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        # trylast: after pytest-xdist has stopped its workers (their own fixtures stopped their servers).
        grace = float(os.environ.get(GRACE_ENV, GRACE_SECONDS))
        self.reaped = wait_gone(self.marker, grace, exclude=ancestors())
        if not self.reaped:
            return
        kill(self.reaped)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.reaped:
            return
        terminalreporter.section("processes the run left behind (SIGKILLed now; some test leaks them)", red=True)
        for line in describe(self.reaped):
            terminalreporter.write_line(line)


def pytest_configure(config: pytest.Config) -> None:
    # The controller (or a run without xdist) marks the run; xdist's workers inherit the marker it set.
    if hasattr(config, "workerinput"):
        return
    inherited = os.environ.get(RUN_ENV)
    own = f"pytest-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    marker = f"{inherited}/{own}" if inherited else own
    os.environ[RUN_ENV] = marker
    config.pluginmanager.register(Reaper(marker), "reaper")
