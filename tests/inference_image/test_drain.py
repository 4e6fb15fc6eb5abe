"""The drain around mpirun, run for real: a group of two "hosts" under the real mpirun of both Open MPI lines,
the supervisor as PID 1 would run it, SIGTERM as the kubelet sends it. The server rank must get the whole
drain while the other rank keeps running, and only then does the world stop (plain mpirun would have killed
both within 0.5-2 s: tests/catalog/test_open_mpi.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from inference_platform.catalog import open_mpi
from inference_platform.inference_image import drain, mpi_world
from inference_platform.processes import die_with_parent
from tests.mpi_tools import local_agent, mpi_env, mpirun

pytestmark = pytest.mark.live  # real processes that mostly wait: scheduled first (tests/conftest.py)

# TEST STAND-IN for trtllm-llmapi-launch: rank 0 runs the command it is given, the others a worker loop.
LAUNCH = """#!/bin/sh
if [ "$OMPI_COMM_WORLD_RANK" = 0 ]; then exec "$@"; fi
# Each beat replaces the file whole (a rename): the test reading it never sees the empty file `>` leaves first.
while :; do date +%s.%N > "$LOGS/.rank-$OMPI_COMM_WORLD_RANK"; mv -f "$LOGS/.rank-$OMPI_COMM_WORLD_RANK" "$LOGS/rank-$OMPI_COMM_WORLD_RANK"; sleep 0.1; done
"""
# TEST STAND-IN for the server: drains for $DRAIN seconds after SIGTERM, as Triton's --exit-timeout-secs does.
SERVER = """#!/bin/sh
trap 'echo "TERM $(date +%s.%N)" >> "$LOGS/server"; sleep "$DRAIN"; echo "DONE $(date +%s.%N)" >> "$LOGS/server"; exit 0' TERM
echo "UP $(date +%s.%N)" >> "$LOGS/server"
while :; do sleep 0.05; done
"""
SUPERVISE = """
import json, sys
from pathlib import Path
from inference_platform.inference_image import drain, mpi_world
spec = json.loads(sys.argv[1])
children = mpi_world.leader_children(spec["mpirun"], pidfile=Path(spec["pidfile"]))
sys.exit(drain.Supervisor(children, exit_timeout_seconds=spec["exit_timeout"], stop_grace_seconds=2).run())
"""


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _events(path: Path) -> dict[str, float]:
    return {kind: float(at) for kind, at in (line.split() for line in path.read_text().splitlines())}


def _group(tmp_path: Path, line: str, *, drain_seconds: float, exit_timeout: float):
    binary = mpirun(line)
    pidfile = tmp_path / "server.pid"
    argv = mpi_world.mpirun_argv(hosts=["localhost", "worker-1"], ranks_per_node=1,
                                 server_argv=[str(_script(tmp_path / "server.sh", SERVER))], mpirun=str(binary),
                                 launcher=str(_script(tmp_path / "launch.sh", LAUNCH)), python=sys.executable,
                                 pidfile=pidfile)  # fmt: skip
    env = mpi_env(**dict(open_mpi.launch_agent_env(str(local_agent(tmp_path)))), LOGS=str(tmp_path),
                  DRAIN=str(drain_seconds))  # fmt: skip
    spec = {"mpirun": argv, "pidfile": str(pidfile), "exit_timeout": exit_timeout}
    # The supervisor's own account (drain: ... lines) goes to a file the tests read.
    with open(tmp_path / "supervisor.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", SUPERVISE, json.dumps(spec)], env=env, stderr=log,
                                preexec_fn=die_with_parent())  # fmt: skip
    deadline = time.monotonic() + 60
    while not ((tmp_path / "server").exists() and (tmp_path / "rank-1").exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None and pidfile.exists(), "the group did not start"
    time.sleep(0.3)
    return proc, pidfile


def _finish(proc: subprocess.Popen, timeout: float) -> int:
    try:
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("line", ["4.1", "5.0"])
def test_sigterm_drains_the_server_while_the_other_ranks_keep_running(tmp_path, line):
    proc, _ = _group(tmp_path, line, drain_seconds=2.5, exit_timeout=10)
    proc.send_signal(signal.SIGTERM)
    code = _finish(proc, timeout=30)
    server = _events(tmp_path / "server")
    assert code == 0
    # The supervisor sent the drain's SIGTERM (to the pid rank 0 recorded: the server, not mpirun, which would
    # delay it and then kill the world) ...
    assert "drain: SIGTERM to mpirun; waiting up to 10 s" in (tmp_path / "supervisor.log").read_text()
    assert server["DONE"] - server["TERM"] >= 2.4  # ... and the server drained for the whole of its own 2.5 s sleep
    # The other rank (its NCCL peer) lived through the drain; mpirun stopped it afterwards.
    last_beat = float((tmp_path / "rank-1").read_text())
    assert last_beat >= server["DONE"] - 0.5
    assert _beats_stop(tmp_path / "rank-1"), "rank 1 kept beating after the group ended"


def _beats_stop(beat: Path, deadline_s: float = 20.0) -> bool:
    """Whether the rank's beat (every 0.1 s while it lives) stops changing within the deadline. Open MPI 4.1's daemon
    on the worker may end its rank a moment after mpirun itself returns (seen under CI's four workers): what matters
    is that it ends, not how soon."""
    deadline = time.monotonic() + deadline_s
    last = beat.read_text()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = beat.read_text()
        if now == last:
            return True
        last = now
    return False


def test_a_drain_beyond_the_budget_is_cut_at_exit_timeout(tmp_path):
    proc, _ = _group(tmp_path, "5.0", drain_seconds=600, exit_timeout=2)
    proc.send_signal(signal.SIGTERM)
    # A 600 s drain the supervisor did not wait for: cut at its 2 s budget, which it says.
    code = _finish(proc, timeout=60)
    assert code == drain.EXIT_SIGNALLED
    assert "drain: mpirun still running after 2 s" in (tmp_path / "supervisor.log").read_text()
    assert "DONE" not in _events(tmp_path / "server")


def test_a_rank_that_dies_stops_the_pod_with_its_code(tmp_path):
    failing = _script(tmp_path / "fail.sh", "#!/bin/sh\nexit 3\n")
    sup = drain.Supervisor([drain.Child("server", [str(failing)], drain_first=True),
                            drain.Child("other", ["sleep", "30"])], exit_timeout_seconds=5,
                           stop_grace_seconds=1)  # fmt: skip
    assert sup.run() == 3
    # Stopped by the supervisor's SIGTERM, not left to end its 30 s by itself.
    assert sup.procs["other"].returncode == -signal.SIGTERM


def test_rank0_records_its_pid_and_becomes_the_server(tmp_path):
    pidfile = tmp_path / "server.pid"
    out = subprocess.run([sys.executable, "-m", mpi_world.RANK0_MODULE, "rank0", str(pidfile), "sh", "-c", "echo $$"],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == pidfile.read_text().strip()


HOLD = """
import sys
from pathlib import Path
from inference_platform.inference_image import drain
flag = Path(sys.argv[1])
sys.exit(drain.hold(float(sys.argv[2]), busy=flag.exists))
"""


@pytest.mark.parametrize(("release_after", "budget", "expect"), [(1.0, 20, (0.8, 4)), (None, 2, (1.8, 5))])
def test_a_worker_holds_its_ranks_through_the_drain_up_to_the_budget(tmp_path, release_after, budget, expect):
    flag = tmp_path / "ranks-running"
    flag.touch()
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(flag), str(budget)], preexec_fn=die_with_parent())
    time.sleep(1.5)
    assert proc.poll() is None  # idle until SIGTERM
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    if release_after is not None:
        time.sleep(release_after)
        flag.unlink()
    assert _finish(proc, timeout=30) == 0
    assert expect[0] <= time.monotonic() - sent <= expect[1]


def test_other_processes_are_everything_but_pid_1_and_zombies(tmp_path):
    for pid, state in (("1", "S"), ("40", "R"), ("41", "Z")):
        (tmp_path / pid).mkdir()
        (tmp_path / pid / "stat").write_text(f"{pid} (prted (x)) {state} 1 1\n")
    (tmp_path / "self").mkdir()
    assert drain.other_processes(own=1, proc=tmp_path) == [40]


def test_the_llmapi_launcher_gets_plain_words_and_rank_0_lands_on_the_leader():
    argv = mpi_world.mpirun_argv(hosts=["leader", "leader-1"], ranks_per_node=8, server_argv=["tritonserver", "--x=1"])
    assert argv[:7] == ["mpirun", "--host", "leader:8,leader-1:8", "--map-by", "slot", "-n", "16"]
    assert argv[7:] == ["trtllm-llmapi-launch", "python3", "-m", mpi_world.RANK0_MODULE, "rank0",
                        str(mpi_world.SERVER_PIDFILE), "tritonserver", "--x=1"]  # fmt: skip
    with pytest.raises(ValueError, match="word-splits"):
        mpi_world.mpirun_argv(hosts=["leader"], ranks_per_node=1, server_argv=["sh", "-c", "a b"])
