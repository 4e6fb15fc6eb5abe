"""A server child process (tritonserver, the OpenAI server) with a bounded readiness wait and a teardown that
always reaps it.

Readiness is the child's own: a 200 from its readiness path (Triton's ``/v2/health/ready`` by default)
counts only once the HTTP port's listening socket belongs to a process of the child's group, so another
server already on that port (a second ``serve-local``) never makes this one look ready.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from inference_platform.errors import CommandError
from inference_platform.inference_image.defaults import READY_PATH
from inference_platform.processes import die_with_parent, stop_group

DEFAULT_READY_TIMEOUT = 120.0
STOP_TIMEOUT = 20.0


class ServerProcess:
    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        http_url: str,
        log: Path | None = None,
        ready_path: str = READY_PATH,
        name: str = "tritonserver",
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self.http_url = http_url.rstrip("/")
        self.log = log
        self.ready_path = ready_path
        self.name = name
        self.process: subprocess.Popen[bytes] | None = None
        self._output: BinaryIO | None = None

    def start(self) -> ServerProcess:
        output = open(self.log, "wb") if self.log is not None else None  # noqa: SIM115 - closed in stop()
        # A new session: stopping signals the whole group (tritonserver and its Python stubs). Its own session
        # also shields it from the parent's group being killed, so it asks the kernel for a SIGTERM of its own
        # when the parent dies (Linux), or a SIGKILLed serve-local would leave its servers running.
        self.process = subprocess.Popen(
            self.argv,
            env=self.env,
            stdout=output,
            stderr=subprocess.STDOUT if output else None,
            start_new_session=True,
            preexec_fn=die_with_parent(),
        )
        self._output = output
        return self

    def wait_ready(self, timeout: float = DEFAULT_READY_TIMEOUT) -> None:
        """Return once the readiness path answers 200; raise CommandError if the server exits or times out."""
        assert self.process is not None, "start() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                raise CommandError(f"{self.name} exited with status {code} before it was ready{self._log_hint()}")
            if http_ready(self.http_url + self.ready_path) and self._owns_http_port():
                return
            time.sleep(0.25)
        raise CommandError(f"{self.name} was not ready within {timeout:.0f} s{self._log_hint()}")

    def wait(self) -> int:
        assert self.process is not None
        return self.process.wait()

    def stop(self) -> int | None:
        """SIGTERM the process group, then SIGKILL after STOP_TIMEOUT; always reaps the child and its group."""
        process = self.process
        if process is None:
            return None
        try:
            return stop_group(process, STOP_TIMEOUT)
        finally:
            if self._output is not None:
                self._output.close()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _owns_http_port(self) -> bool:
        """Whether the HTTP port is listened on by the child's process group (True where /proc is absent)."""
        assert self.process is not None
        port = urllib.parse.urlsplit(self.http_url).port
        if port is None:
            return True
        owners = listening_pids(port)
        return owners is None or any(_group_of(pid) == self.process.pid for pid in owners)

    def _log_hint(self) -> str:
        return f" (log: {self.log})" if self.log is not None else ""


def http_ready(url: str, timeout: float = 2.0) -> bool:
    """Whether ``url`` answers 200 now (a readiness probe: any failure to get an HTTP 200 is "not yet")."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    # HTTPException: an answer that is not HTTP is not ready either. While nothing listens yet on a loopback port
    # of the ephemeral range, Linux may give the probe that very port as its source and connect it to itself (a
    # TCP simultaneous open): the probe then reads its own "GET /health HTTP/1.1" back (BadStatusLine), which
    # ended a clean-clone run's serve-local before its server had started.
    except (urllib.error.URLError, ConnectionError, TimeoutError, http.client.HTTPException):
        return False


def listening_pids(port: int) -> set[int] | None:
    """Pids holding a TCP socket that listens on ``port`` (IPv4 or IPv6); None without /proc."""
    inodes = set()
    found_table = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        found_table = True
        for line in lines:
            fields = line.split()
            # local_address is HEXIP:HEXPORT; state 0A is LISTEN; field 9 is the socket's inode.
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not found_table:
        return None
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue  # gone, or another user's process
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") in inodes:
                    pids.add(int(entry))
                    break
            except OSError:
                continue
    return pids


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
