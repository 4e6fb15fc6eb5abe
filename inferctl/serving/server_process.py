"""A tritonserver child process with a bounded readiness wait and a teardown that always reaps it."""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from inferctl.errors import CommandError
from inferctl.processes import stop_group
from inference_image.defaults import READY_PATH

DEFAULT_READY_TIMEOUT = 120.0
STOP_TIMEOUT = 20.0


class ServerProcess:
    def __init__(self, argv: Sequence[str], *, env: dict[str, str], http_url: str, log: Path | None = None) -> None:
        self.argv = list(argv)
        self.env = env
        self.http_url = http_url.rstrip("/")
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self._output: BinaryIO | None = None

    def start(self) -> ServerProcess:
        output = open(self.log, "wb") if self.log is not None else None  # noqa: SIM115 - closed in stop()
        # A new session: stopping signals the whole group (tritonserver and its Python stubs).
        self.process = subprocess.Popen(
            self.argv, env=self.env, stdout=output, stderr=subprocess.STDOUT if output else None, start_new_session=True
        )
        self._output = output
        return self

    def wait_ready(self, timeout: float = DEFAULT_READY_TIMEOUT) -> None:
        """Return once /v2/health/ready answers 200; raise CommandError if the server exits or times out."""
        assert self.process is not None, "start() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                raise CommandError(f"tritonserver exited with status {code} before it was ready{self._log_hint()}")
            if _ready(self.http_url + READY_PATH):
                return
            time.sleep(0.25)
        raise CommandError(f"tritonserver was not ready within {timeout:.0f} s{self._log_hint()}")

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

    def _log_hint(self) -> str:
        return f" (log: {self.log})" if self.log is not None else ""


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False
