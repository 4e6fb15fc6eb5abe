"""Nothing a test run starts outlives it (tests/reaper.py), proven on runs of pytest inside this one.

The xdist worker of a pytest holding every kind of server the suite starts is SIGKILLed from outside, as the OOM
killer would: it runs no teardown, so the kernel's parent-death signal (``die_with_parent``) stops its children,
each of which stops its own, and the session's end kills what outlived its parent all the same (mpirun aborts on a
second SIGTERM, which the kernel sends once per thread of a dying parent, and leaves its ranks). The processes are
found by the run's marker (tests/run_processes.py), never by name: other engineers' servers here are not ours.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from inference_platform.processes import die_with_parent
from tests.conftest import REPO
from tests.reaper import GRACE_ENV
from tests.run_processes import RUN_ENV, describe, kill, processes_of

START_TIMEOUT = 180.0
"""Bound on the held run's start: Triton, Envoy, the batch lane, Prometheus, mpirun and Locust."""
GONE_TIMEOUT = 60.0
"""Bound on their going once the run is killed (Triton unloads its model; mpirun delays its ranks' SIGTERM)."""

HOLDS_SERVERS = """
import os

from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.inferctl.cli import main
from inference_platform.settings import stack_files
from inference_platform.processes import die_with_parent

from tests.batch.conftest import Moto, make_lane, stand_in_serving
from tools.local_openai_stack import openai_stack
from tests.mpi_tools import mpi_env, mpirun
from tests.observability.prometheus_server import Target, running_prometheus
from inference_platform.processes import free_port
import shutil
import subprocess


def test_holds_every_kind_of_server(tmp_path):
    stack_work, lane_work = tmp_path / "stack", tmp_path / "lane"
    lane_work.mkdir()
    with openai_stack(stack_files.load("dev"), stack_work, Timing()) as stack, stand_in_serving(lane_work) as serving:
        lane = make_lane(Moto(), lane_work)
        lane.api()
        lane.worker(BATCH_SERVING_URL=serving.url)
        metrics = stack.triton_metrics_url.split("/")[2]
        target = Target(job="triton", address=metrics, labels={})
        with running_prometheus(shutil.which("prometheus"), tmp_path / "prom", free_port(), [target], []):
            subprocess.Popen([str(mpirun("4.1")), "-n", "2", "--oversubscribe", "sleep", "600"], env=mpi_env(),
                             start_new_session=True, preexec_fn=die_with_parent())
            # Locust's master and a worker load the stack until the run is killed (it never ends by itself).
            main(["loadtest", "run", "--url", stack.openai_url, "--concurrency", "2", "--isl", "8", "--osl", "4",
                  "--max-requests", "1000000", "--duration", "600", "--workers", "1", "--out", str(tmp_path / "load")])
"""
# What the held run must have started before it is killed (command-line fragments, each of one process at least).
SERVERS = {
    "tritonserver": "/bin/tritonserver",
    "Triton's Python stub": "triton_python_backend_stub",
    "the OpenAI server": "inference_platform.inference_image.openai_api",
    "Envoy": "envoy.json",
    "the batch API": "inference_platform.batch api",
    "the batch worker": "inference_platform.batch worker",
    "the serving stand-in": "tests.batch.openai_stand_in",
    "Prometheus": "prometheus --config.file",
    "mpirun": "mpirun.openmpi -n 2",
    "an MPI rank": "sleep 600",
    "Locust's master": "locust -f",
    "Locust's worker": "--worker --master-host",
}


def run_marker(name: str) -> str:
    """A marker below this run's (so this run's own reaper and CI's check cover it too)."""
    return f"{os.environ[RUN_ENV]}/{name}-{uuid.uuid4().hex[:8]}"


@pytest.mark.live
@pytest.mark.timeout(420)
def test_a_worker_killed_with_every_kind_of_server_running_leaves_none(tmp_path):
    (tmp_path / "test_holds_servers.py").write_text(HOLDS_SERVERS)
    marker = run_marker("killed")
    env = {**os.environ, RUN_ENV: marker, "PYTHONPATH": str(REPO)}
    log = tmp_path / "held-run.log"
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.reaper", "-n", "1", "-q", "-s",
            "test_holds_servers.py"]  # fmt: skip
    with open(log, "wb") as output:
        held = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=output, stderr=subprocess.STDOUT,
                                preexec_fn=die_with_parent())  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while missing := _missing(processes_of(marker)):
            assert held.poll() is None, f"the held run ended ({held.returncode}) first:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"never started: {missing}\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        # The xdist worker running the test, alone: it runs no teardown, and nothing signals its children's groups.
        (worker,) = [p for p in processes_of(marker) if parent_of(p.pid) == held.pid]
        os.kill(worker.pid, signal.SIGKILL)
        held.wait(timeout=GONE_TIMEOUT + 60)
        text = log.read_text()
        assert "crashed" in text, text[-3000:]
        left = processes_of(marker)
        assert left == [], "survived the run whose worker was killed:\n" + "\n".join(describe(left))
        # What the session's end still had to kill (the kernel's parent-death signal stopped the rest): printed.
        print(text[text.find("processes the run left behind") :][:2000])
    finally:
        if held.poll() is None:
            held.kill()
            held.wait(timeout=30)
        kill(processes_of(marker))


def parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def _missing(processes) -> list[str]:
    commands = [p.command for p in processes]
    return [name for name, fragment in SERVERS.items() if not any(fragment in c for c in commands)]


LEAKS = """
import subprocess


def test_leaks_a_process():
    subprocess.Popen(["sleep", "600"])  # no teardown, no die_with_parent: a leak the session end must catch
"""


def test_a_run_that_leaks_a_process_kills_it_names_it_and_fails(tmp_path):
    (tmp_path / "test_leaks.py").write_text(LEAKS)
    marker = run_marker("leaky")
    # No grace: nothing of this run is being stopped at its end, the leak would only be waited for.
    env = {**os.environ, RUN_ENV: marker, "PYTHONPATH": str(REPO), GRACE_ENV: "0"}
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "tests.reaper", "-q", "test_leaks.py"]
    try:
        result = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert "1 passed" in result.stdout, result.stdout
        assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
        assert "processes the run left behind" in result.stdout and "sleep 600" in result.stdout, result.stdout
        assert processes_of(marker) == []
    finally:
        kill(processes_of(marker))


def test_the_ci_check_names_what_outlived_the_run_and_fails(tmp_path):
    marker = run_marker("ci-check")
    env = {**os.environ, RUN_ENV: marker}
    survivor = subprocess.Popen(["sleep", "600"], env=env, preexec_fn=die_with_parent())
    check = [sys.executable, "-m", "tests.run_processes", "--marker", marker, "--grace", "0"]
    try:
        found = subprocess.run(check, cwd=REPO, capture_output=True, text=True, timeout=60)
        assert found.returncode == 1 and f"pid {survivor.pid} " in found.stderr and "sleep 600" in found.stderr
    finally:
        survivor.kill()
        survivor.wait(timeout=30)
    clean = subprocess.run(check, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert clean.returncode == 0 and f"no process of test run {marker} is left" in clean.stdout, clean.stderr


def test_processes_of_a_run_are_found_below_its_marker_only(tmp_path):
    marker = run_marker("scoped")
    started = {
        name: subprocess.Popen(["sleep", "600"], env={**os.environ, RUN_ENV: value}, preexec_fn=die_with_parent())
        for name, value in (("own", marker), ("nested", f"{marker}/inner"), ("sibling", f"{marker}-other"))
    }
    try:
        found = {p.pid for p in processes_of(marker)}
        assert found == {started["own"].pid, started["nested"].pid}
    finally:
        for process in started.values():
            process.kill()
            process.wait(timeout=30)
    assert processes_of(marker) == []


def test_the_repository_ships_the_ci_step(repo: Path):
    """CI runs the check after make test, under the marker it gave the run (so a killed session is covered too)."""
    script = (repo / ".ci" / "run").read_text()
    assert f"export {RUN_ENV}=" in script
    assert script.index("make test") < script.index("-m tests.run_processes")
