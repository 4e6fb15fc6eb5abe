"""The Locust side of ``inferctl loadtest``: an LLM-aware user, the ramp shape and record shipping.

Locust loads this file (``locust -f``) in the master and in every worker; it reads the run's
:class:`LoadConfig` from the file named by ``CONFIG_ENV`` and the API key from ``API_KEY_ENV``.

- Users stream each answer (OpenAI chat completions, server-sent events) and time the first chunk and
  every later one, counted by the final chunk's ``usage``, on geventhttpclient directly: Locust's
  HTTP session would time only the headers of a streamed answer. Each request is also reported to
  Locust's own statistics (``events.request``) with its full latency.
- ``concurrency`` and ``ramp`` are closed loops (a user sends its next request when the last one
  ends); ``rate`` runs one open-loop Poisson arrival stream per process.
- Workers ship per-request records to the master (Locust custom messages); the master (or the single
  local process) writes them to ``RECORDS_ENV`` as JSON lines, tags each with the offered load, and
  quits once ``max_requests`` records are in. ``--run-time`` bounds the wall time.
"""

from __future__ import annotations

import json
import os
import random
import ssl
import time
import urllib.parse
from pathlib import Path
from typing import Any

import gevent
from gevent.pool import Pool
from geventhttpclient import HTTPClient
from locust import LoadTestShape, User, events, task
from locust.exception import StopUser
from locust.runners import MasterRunner, WorkerRunner

from inference_platform.loadgen.api_key_header import api_key_headers
from inference_platform.loadgen.config import API_KEY_ENV, CONFIG_ENV, RECORDS_ENV, WORKER_INDEX_ENV, LoadConfig
from inference_platform.loadgen.records import RequestRecord
from inference_platform.loadgen.requests import parse_event, plan_request, structured_problem

MESSAGE = "inferctl-records"
DONE_MESSAGE = "inferctl-stream-done"
FLUSH_SECONDS = 0.5
SATURATED = "generator in-flight cap reached (server saturated)"
ERROR_BACKOFF_S = 0.5

CONFIG = LoadConfig.from_json(Path(os.environ[CONFIG_ENV]).read_text(encoding="utf-8"))
WORKER_INDEX = int(os.environ.get(WORKER_INDEX_ENV, "0"))
_URL = urllib.parse.urlsplit(CONFIG.url)
_PREFIX = _URL.path.rstrip("/")


def _headers() -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    return {**headers, **api_key_headers(CONFIG.api_key_header, os.environ.get(API_KEY_ENV))}


HEADERS = _headers()


class _Budget:
    """This process's share of max_requests; gevent switches only at I/O, so no lock is needed."""

    remaining = CONFIG.request_budget(WORKER_INDEX)

    @classmethod
    def take(cls) -> bool:
        if cls.remaining <= 0:
            return False
        cls.remaining -= 1
        return True


_outbox: list[dict[str, Any]] = []


def _ssl_context() -> ssl.SSLContext:
    return ssl.create_default_context(cafile=CONFIG.ca_file)


class LlmUser(User):
    _streams_started = 0
    _pause = 0.0

    def wait_time(self) -> float:
        # After a failure a closed-loop user pauses, as a client honouring Retry-After would: without it,
        # instant 429s from the edge's rate limit would spin the loop and use up the request budget.
        return self._pause

    def on_start(self) -> None:
        LlmUser._streams_started += 1
        self.rng = random.Random(CONFIG.seed * 1_000_003 + WORKER_INDEX * 7919 + LlmUser._streams_started)
        in_flight = max(1, CONFIG.shape.concurrency // CONFIG.streams) if CONFIG.shape.kind == "rate" else 1
        self.in_flight = in_flight
        assert _URL.hostname is not None  # LoadConfig.problems refused a URL without a host before the run
        self.http = HTTPClient(
            _URL.hostname,
            port=_URL.port,
            ssl=_URL.scheme == "https",
            ssl_context_factory=_ssl_context if _URL.scheme == "https" else None,
            concurrency=in_flight,
            connection_timeout=CONFIG.timeout_s,
            network_timeout=CONFIG.timeout_s,
        )

    def on_stop(self) -> None:
        self.http.close()

    @task
    def send(self) -> None:
        if CONFIG.shape.kind == "rate":
            self._arrivals()
        if not _Budget.take():
            raise StopUser()
        self._one()

    def _arrivals(self) -> None:
        """Poisson arrivals at this stream's share of the rate, each request in its own greenlet."""
        assert CONFIG.shape.rate is not None
        rate = CONFIG.shape.rate / CONFIG.streams
        pool = Pool(self.in_flight)
        due = time.perf_counter()
        # Arrivals end with the run; the last requests then finish within Locust's stop timeout.
        last_arrival = due + CONFIG.duration_s
        arrivals = 0
        while due < last_arrival and _Budget.take():
            # An absolute schedule: a late wake-up does not stretch the next gap.
            due += self.rng.expovariate(rate)
            delay = due - time.perf_counter()
            if delay > 0:
                gevent.sleep(delay)
            if pool.full():
                self._record(RequestRecord(start=time.time(), latency_ms=0.0, ok=False, error=SATURATED), None)
            else:
                pool.spawn(self._one)
            arrivals += 1
        pool.join()
        # Everything this stream produced goes out before its count: the master quits on the count.
        runner = self.environment.runner
        _flush(runner)
        runner.send_message(DONE_MESSAGE, arrivals)
        raise StopUser()

    def _one(self) -> None:
        planned = plan_request(CONFIG, self.rng)
        start = time.time()
        t0 = time.perf_counter()
        first: float | None = None
        last: float | None = None
        pieces = 0
        reported: int | None = None
        text: list[str] = []
        error: str | None = None
        received = 0
        done = False
        try:
            response = self.http.post(_PREFIX + planned.path, body=json.dumps(planned.body), headers=HEADERS)
            try:
                if response.status_code != 200:
                    error = f"HTTP {response.status_code}: {response.read()[:120]!r}"
                else:
                    while True:
                        line = response.readline(b"\n")
                        if not line:
                            break
                        received += len(line)
                        if not line.startswith(b"data:"):
                            continue
                        piece = parse_event(line[5:])
                        if piece.error is not None:
                            error = piece.error
                            break
                        if piece.tokens is not None:
                            reported = piece.tokens
                        if piece.text:
                            now = time.perf_counter()
                            first = now if first is None else first
                            last = now
                            pieces += 1
                            text.append(piece.text)
                        if piece.done:
                            done = True
                            break
                    # A server that dies mid-answer closes the socket: the chunked body never ends.
                    if error is None and not done and not response.message_complete:
                        error = "stream cut off before its end"
            finally:
                response.release()
        except Exception as err:  # every failure is a counted error, never a crashed user
            error = f"{type(err).__name__}: {err}"[:200]
        end = time.perf_counter()
        if error is None and first is None:
            error = "stream ended without a token"
        if error is None and planned.kind == "structured":
            problem = structured_problem("".join(text))
            if problem is not None:
                error = f"structured output invalid: {problem}"[:200]
        tokens = reported if reported is not None else pieces
        record = RequestRecord(
            start=start,
            latency_ms=(end - t0) * 1000,
            ok=error is None,
            ttft_ms=None if first is None else (first - t0) * 1000,
            itl_ms=(last - first) * 1000 / (tokens - 1) if first is not None and last and tokens > 1 else None,
            output_tokens=tokens if error is None else 0,
            kind=planned.kind,
            error=error,
        )
        self._pause = 0.0 if record.ok else ERROR_BACKOFF_S
        self._record(record, received)

    def _record(self, record: RequestRecord, received: int | None) -> None:
        self.environment.events.request.fire(
            request_type="POST",
            name=record.kind if received is not None else "arrival",
            response_time=record.latency_ms,
            response_length=received or 0,
            exception=RuntimeError(record.error) if record.error else None,
            context={"ttft_ms": record.ttft_ms, "itl_ms": record.itl_ms},
        )
        _outbox.append({**record.__dict__, "worker": f"w{WORKER_INDEX}"})


if CONFIG.shape.kind == "ramp":

    class RampShape(LoadTestShape):
        """Each concurrency in ``steps`` for ``step_seconds``, then stop."""

        def tick(self) -> tuple[int, float] | None:
            step = int(self.get_run_time() // CONFIG.shape.step_seconds)
            if step >= len(CONFIG.shape.steps):
                return None
            users = CONFIG.shape.steps[step]
            _Collector.mark(float(users))
            return users, float(CONFIG.shape.steps[-1])


class _Collector:
    """Master (or single process): write records as they arrive and quit once all are in."""

    out: Any = None
    count = 0
    streams_done = 0
    expected = 0
    timeline: list[tuple[float, float]] = []
    runner: Any = None

    @classmethod
    def mark(cls, load: float) -> None:
        if not cls.timeline or cls.timeline[-1][1] != load:
            cls.timeline.append((time.time(), load))

    @classmethod
    def load_at(cls, when: float) -> float:
        load = cls.timeline[0][1] if cls.timeline else CONFIG.shape.levels()[0]
        for since, level in cls.timeline:
            if since <= when:
                load = level
        return load

    @classmethod
    def receive(cls, environment: Any, msg: Any, **kwargs: Any) -> None:
        for item in msg.data:
            item["load"] = cls.load_at(item["start"])
            cls.out.write(RequestRecord.from_dict(item).to_json() + "\n")
            cls.count += 1
        cls.out.flush()
        cls._maybe_quit()

    @classmethod
    def stream_done(cls, environment: Any, msg: Any, **kwargs: Any) -> None:
        cls.streams_done += 1
        cls.expected += int(msg.data)
        cls._maybe_quit()

    @classmethod
    def _maybe_quit(cls) -> None:
        # All requests in, or every arrival stream finished and all it sent is in (rate ends on time).
        finished = cls.streams_done >= CONFIG.streams and cls.count >= cls.expected
        if (cls.count >= CONFIG.max_requests or finished) and cls.runner is not None:
            runner, cls.runner = cls.runner, None
            gevent.spawn(runner.quit)


def _flush(runner: Any) -> None:
    if _outbox:
        batch = list(_outbox)
        del _outbox[:]
        runner.send_message(MESSAGE, batch)


def _flusher(runner: Any) -> None:
    while True:
        gevent.sleep(FLUSH_SECONDS)
        _flush(runner)


@events.init.add_listener
def _on_init(environment: Any, **kwargs: Any) -> None:
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        gevent.spawn(_flusher, runner)
        return
    _Collector.out = open(os.environ[RECORDS_ENV], "a", encoding="utf-8")  # noqa: SIM115 - closed at quit
    _Collector.runner = runner
    if CONFIG.shape.kind != "ramp":
        _Collector.mark(CONFIG.shape.levels()[0])
    runner.register_message(MESSAGE, _Collector.receive)
    runner.register_message(DONE_MESSAGE, _Collector.stream_done)
    if not isinstance(runner, MasterRunner):
        gevent.spawn(_flusher, runner)


@events.test_stop.add_listener
def _on_test_stop(environment: Any, **kwargs: Any) -> None:
    # Workers flush what the last requests produced before they report stopped (same socket, in order).
    runner = environment.runner
    if runner is not None and not isinstance(runner, MasterRunner):
        _flush(runner)


@events.quitting.add_listener
def _on_quitting(environment: Any, **kwargs: Any) -> None:
    runner = environment.runner
    if runner is not None and not isinstance(runner, (MasterRunner, WorkerRunner)):
        _flush(runner)
    if _Collector.out is not None:
        _Collector.out.close()
        _Collector.out = None
