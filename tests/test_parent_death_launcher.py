"""``with_parent_death`` (inference_platform/processes.py, parent_death.py): the child gets its signal when its
parent dies, exactly as with ``preexec_fn=die_with_parent()``, but the child is started without a fork that
runs the parent's atfork handlers."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from inference_platform.processes import die_with_parent, with_parent_death

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# A parent that starts `sleep` through the launcher, prints the sleep's pid and waits to be killed.
PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from inference_platform.processes import die_with_parent, with_parent_death
    child = subprocess.Popen(with_parent_death(["sleep", "600"]), start_new_session=True)
    print(child.pid, flush=True)
    time.sleep(600)
    """
)


def _state(pid: int) -> str | None:
    """The process's state letter, or None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat[stat.rfind(")") + 2]


def _command(pid: int) -> list[bytes]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")


def test_the_child_is_the_command_itself_and_dies_when_its_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, preexec_fn=die_with_parent())
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        # The launcher exec'd: the pid runs sleep, not a Python that waits for it.
        for _ in range(400):
            if _command(pid)[:1] == [b"sleep"]:
                break
            time.sleep(0.05)
        assert _command(pid)[:2] == [b"sleep", b"600"]
        parent.kill()  # SIGKILL: the parent runs no teardown
        parent.wait(timeout=30)
        for _ in range(400):
            if _state(pid) in (None, "Z"):
                break
            time.sleep(0.05)
        assert _state(pid) in (None, "Z"), "the child outlived its SIGKILLed parent"
    finally:
        parent.kill()
        parent.wait(timeout=30)


def test_a_parent_already_gone_gets_the_signal_at_once():
    # The pid given is not this child's parent (as if the parent died before the prctl): it signals itself.
    launcher = with_parent_death(["sleep", "600"], signal.SIGTERM)
    launcher[launcher.index("--") - 2] = "1"
    result = subprocess.run(launcher, timeout=60, check=False)
    assert result.returncode == -signal.SIGTERM


def test_the_launcher_refuses_a_command_line_it_cannot_read():
    result = subprocess.run(
        [sys.executable, "-m", "inference_platform.parent_death", "1", "15"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "usage:" in result.stderr
