"""TEST WITNESS: a TCP relay between the local edge and the OpenAI server that records, per request, the client id
the edge forwarded and every byte of the answer it passed to the edge, so a test can add up the ``usage`` the
replica reported without trusting the edge (issue 30's conformance test).

A request carrying ``x-test-hold-after: N`` has its answer passed only up to the end of its N-th SSE event, the
rest held back until the edge closes the connection: a client that reads N events and cancels is then charged for
exactly what reached the edge (no byte in flight decides the result).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

HOLD_HEADER = "x-test-hold-after"
_COMMENT = re.compile(rb"^: usage (\{.*\})$", re.M)
_DATA_USAGE = re.compile(rb'"usage":(\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})')


@dataclass
class Exchange:
    client: str | None
    path: str
    hold_after: int | None
    answer: bytearray = field(default_factory=bytearray)

    def reported_tokens(self) -> int:
        """prompt + completion tokens of the last usage the answer carried (comment or data), 0 without one."""
        found: list[tuple[int, dict[str, int]]] = []
        for m in _COMMENT.finditer(self.answer):
            found.append((m.start(), json.loads(m.group(1))))
        for m in _DATA_USAGE.finditer(self.answer):
            found.append((m.start(), json.loads(m.group(1))))
        if not found:
            return 0
        usage = max(found, key=lambda f: f[0])[1]
        return int(usage["prompt_tokens"]) + int(usage["completion_tokens"])


class Relay:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.exchanges: list[Exchange] = []
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()

    def serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, down: socket.socket) -> None:
        up = socket.create_connection(self.upstream)
        current: list[Exchange] = []

        def requests() -> None:
            buffer, body_left = b"", 0
            try:
                while data := down.recv(65536):
                    buffer += data
                    # Each request is registered before its bytes go upstream: the server may answer before
                    # this thread runs again, and the answer's first bytes must find their exchange (registered
                    # after sending, a fresh connection's answer found none and was dropped on a busy machine).
                    while True:
                        if body_left:
                            skipped = min(body_left, len(buffer))
                            buffer, body_left = buffer[skipped:], body_left - skipped
                            if body_left:
                                break
                        end = buffer.find(b"\r\n\r\n")
                        if end < 0:
                            break
                        head = buffer[:end].decode("latin-1").split("\r\n")
                        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:])}
                        buffer, body_left = buffer[end + 4 :], int(headers.get("content-length", "0"))
                        hold = headers.get(HOLD_HEADER)
                        exchange = Exchange(
                            headers.get("x-client-id"), head[0].split(" ")[1], int(hold) if hold else None
                        )
                        with self.lock:
                            self.exchanges.append(exchange)
                        current.append(exchange)
                    up.sendall(data)
            except OSError:
                pass
            finally:
                with contextlib.suppress(OSError):
                    up.shutdown(socket.SHUT_RDWR)

        reader = threading.Thread(target=requests, daemon=True)
        reader.start()
        held = False
        try:
            while data := up.recv(65536):
                if held:
                    continue
                if not current:
                    raise AssertionError(f"the relay: an answer before any request ({data[:200]!r})")
                exchange = current[-1]
                if exchange.hold_after is not None:
                    whole = bytes(exchange.answer) + data
                    events = [m.end() for m in re.finditer(rb"data: [^\n]*\n\n(\r\n)?", whole)]
                    if len(events) >= exchange.hold_after:
                        cut = events[exchange.hold_after - 1] - len(exchange.answer)
                        data, held = data[:cut], True
                exchange.answer += data
                down.sendall(data)
        except OSError:
            pass
        finally:
            reader.join(timeout=5)
            for s in (up, down):
                with contextlib.suppress(OSError):
                    s.close()


@contextlib.contextmanager
def relay(upstream: tuple[str, int]) -> Iterator[Relay]:
    running = Relay(upstream)
    thread = threading.Thread(target=running.serve, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.stopped.set()
        running.listener.close()
        thread.join(timeout=5)
