"""What mpirun does to its ranks on SIGTERM, and how it is told to use our agent: run on both Open MPI lines
the images may carry, pinning catalog/open_mpi.py (which cites the source files and tags)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from inference_platform.catalog import open_mpi
from inference_platform.processes import die_with_parent
from tests.mpi_tools import local_agent, mpi_env, mpirun

pytestmark = pytest.mark.live  # real processes that mostly wait: scheduled first (tests/conftest.py)

# A rank that records when SIGCONT/SIGTERM arrive and would take 30 s to drain: only SIGKILL stops it sooner.
RANK = """#!/bin/sh
log="$1/rank-$OMPI_COMM_WORLD_RANK"
trap 'echo "CONT $(date +%s.%N)" >> "$log"' CONT
trap 'echo "TERM $(date +%s.%N)" >> "$log"; sleep 30; echo "DONE $(date +%s.%N)" >> "$log"; exit 0' TERM
echo "UP $(date +%s.%N)" >> "$log"
while :; do sleep 0.05; done
"""


def _events(path: Path) -> dict[str, float]:
    return {kind: float(at) for kind, at in (line.split() for line in path.read_text().splitlines())}


def _terminate(binary: Path, tmp_path: Path, **env: str) -> tuple[float, list[dict[str, float]], float]:
    rank = tmp_path / "rank.sh"
    rank.write_text(RANK)
    rank.chmod(0o755)
    proc = subprocess.Popen([str(binary), "-n", "2", "--oversubscribe", str(rank), str(tmp_path)], env=mpi_env(**env),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent())  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("rank-*"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        sent = time.time()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        ended = time.time() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    time.sleep(0.5)
    return sent, [_events(p) for p in sorted(tmp_path.glob("rank-*"))], ended


def test_open_mpi_4_gives_ranks_the_sigkill_timeout_after_delaying_their_sigterm_by_it(tmp_path):
    binary = mpirun("4.1")
    info = subprocess.run([str(binary.with_name("ompi_info")), "--param", "odls", "base", "--level", "9"],
                          capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    assert f'"{open_mpi.SIGKILL_TIMEOUT_PARAMETER}" (current value: "1"' in info
    default = tmp_path / "default"
    default.mkdir()
    sent, ranks, _ = _terminate(binary, default)
    for events in ranks:
        term = events["TERM"] - sent
        assert open_mpi.SIGKILL_TIMEOUT_DEFAULT_SECONDS * 0.7 < term < open_mpi.SIGKILL_TIMEOUT_DEFAULT_SECONDS * 2
        assert "DONE" not in events  # SIGKILLed mid-drain, one timeout after its SIGTERM

    raised = tmp_path / "raised"
    raised.mkdir()
    sent, ranks, ended = _terminate(binary, raised, OMPI_MCA_odls_base_sigkill_timeout="2")
    for events in ranks:
        assert 1.6 < events["TERM"] - sent < 3.5  # the drain only starts after the timeout...
        assert "DONE" not in events  # ...and ends one more timeout later
    assert ended < 8


def test_open_mpi_5_kills_ranks_within_half_a_second_and_has_no_parameter(tmp_path):
    binary = mpirun("5.0")
    # Neither spelling of the 4.1 parameter changes PRRTE's hard-coded steps.
    sent, ranks, ended = _terminate(binary, tmp_path, OMPI_MCA_odls_base_sigkill_timeout="5",
                                    PRTE_MCA_odls_base_sigkill_timeout="5")  # fmt: skip
    for events in ranks:
        assert events["TERM"] - sent < open_mpi.PRRTE_KILL_STEP_SECONDS * 4
        assert "DONE" not in events
    assert ended < 3


@pytest.mark.parametrize("line", ["4.1", "5.0"])
def test_both_lines_start_the_remote_daemon_through_the_agent(tmp_path, line):
    binary = mpirun(line)
    agent = local_agent(tmp_path)
    env = dict(open_mpi.launch_agent_env(str(agent)))
    out = subprocess.run([str(binary), "--host", "localhost:1,worker-1:1", "--map-by", "slot", "-n", "2",
                          "sh", "-c", "echo rank=$OMPI_COMM_WORLD_RANK"], env=mpi_env(**env),
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split()) == ["rank=0", "rank=1"]
    assert (tmp_path / "agent.log").read_text().split() == ["worker-1"]


def test_open_mpi_5_ignores_the_4_1_spelling_of_the_agent(tmp_path):
    binary = mpirun("5.0")
    agent = local_agent(tmp_path)
    old_only = {k: v for k, v in open_mpi.launch_agent_env(str(agent)) if k.startswith("OMPI_")}
    out = subprocess.run([str(binary), "--host", "localhost:1,worker-1:1", "--map-by", "slot", "-n", "2", "true"],
                         env=mpi_env(**old_only), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode != 0 and not (tmp_path / "agent.log").exists()
