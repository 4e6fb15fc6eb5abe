"""Start Locust for one load test and collect its per-request records, always within a wall-time bound.

Locally ``run`` starts everything on 127.0.0.1: one process (``workers=0``) or a master and
``workers`` worker processes. In a cluster each pod runs one role (``role_argv``): the master in
the verification Job, workers as an Indexed Job whose completion index is the worker index.
Whatever happens (a dead server, a stuck worker), every process is gone when ``run`` returns.
"""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from inference_platform.loadgen.config import API_KEY_ENV, CONFIG_ENV, RECORDS_ENV, WORKER_INDEX_ENV, LoadConfig
from inference_platform.loadgen.records import RequestRecord, read_jsonl
from inference_platform.processes import die_with_parent, free_port, stop_group

# Never imported here: importing Locust monkey-patches the whole process for gevent.
LOCUSTFILE = Path(__file__).with_name("locustfile.py")
# Kubernetes sets this in the pods of an Indexed Job.
JOB_INDEX_ENV = "JOB_COMPLETION_INDEX"
DEFAULT_MASTER_PORT = 5557
EXPECT_WORKERS_WAIT_S = 60
# Beyond the run time: process start, the workers' check-in, and the last requests' own timeout.
STOP_GRACE_S = 20.0
# SIGTERM to SIGKILL, for each Locust process group left at the end.
STOP_TIMEOUT_S = 5.0
# How often ``run`` reports progress while the load runs (when asked to).
PROGRESS_INTERVAL_S = 10.0


@dataclass(frozen=True)
class Progress:
    """Where a running load test is: seconds since its start, of the expected run time, and requests recorded."""

    elapsed_s: float
    expected_s: float
    requests: int
    done: bool = False
    """The last call, once every process has stopped: ``requests`` is then the run's total, the one the report counts."""

    def line(self) -> str:
        rate = self.requests / self.elapsed_s if self.elapsed_s else 0.0
        if self.done:
            return f"  {self.elapsed_s:4.0f} s: done, {self.requests} requests recorded in all ({rate:.1f}/s)"
        return (
            f"  {self.elapsed_s:4.0f} s of ~{self.expected_s:.0f} s: {self.requests} requests recorded so far "
            f"({rate:.1f}/s)"
        )


def print_progress(progress: Progress) -> None:
    """The commands' progress line, on stderr (stdout keeps the report)."""
    print(progress.line(), file=sys.stderr, flush=True)


@dataclass(frozen=True)
class RunResult:
    records: list[RequestRecord]
    exit_codes: dict[str, int | None]
    """Process name -> exit status (None: killed at the wall-time bound)."""
    timed_out: bool
    out_dir: Path
    wall_s: float

    @property
    def records_path(self) -> Path:
        return self.out_dir / "requests.jsonl"


def run_time_s(config: LoadConfig) -> float:
    if config.shape.kind == "ramp":
        return min(config.duration_s, len(config.shape.steps) * config.shape.step_seconds)
    if config.shape.kind == "rate":
        # Arrivals stop at duration_s; the last requests may take up to their timeout to finish (the
        # master quits as soon as every stream reports it is done).
        return config.duration_s + config.timeout_s
    return config.duration_s


def wall_bound_s(config: LoadConfig, *, expect_workers_s: float = EXPECT_WORKERS_WAIT_S) -> float:
    """The hard limit after which every process is killed."""
    return run_time_s(config) + expect_workers_s + config.timeout_s + STOP_GRACE_S


def locust_argv(
    config: LoadConfig,
    role: str,
    *,
    master_host: str = "127.0.0.1",
    master_port: int,
    expect_workers_s: float = EXPECT_WORKERS_WAIT_S,
) -> list[str]:
    """The locust command line of one process (``local``, ``master`` or ``worker``)."""
    argv = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--loglevel", "WARNING"]
    if role == "worker":
        return [*argv, "--worker", "--master-host", master_host, "--master-port", str(master_port)]
    argv += [
        "--headless",
        "--only-summary",
        "--exit-code-on-error",
        "0",
        "--run-time",
        f"{math.ceil(run_time_s(config))}s",
        "--stop-timeout",
        f"{math.ceil(config.timeout_s)}",
    ]
    if config.shape.kind != "ramp":
        argv += ["--users", str(config.streams), "--spawn-rate", str(config.streams)]
    if role == "master":
        argv += [
            "--master",
            "--master-bind-host",
            master_host,
            "--master-bind-port",
            str(master_port),
            "--expect-workers",
            str(config.workers),
            "--expect-workers-max-wait",
            str(math.ceil(expect_workers_s)),
        ]
    return argv


def _wait(
    lead: subprocess.Popen[bytes],
    deadline: float,
    started: float,
    expected_s: float,
    records: Path,
    progress: Callable[[Progress], None] | None,
) -> bool:
    """Wait for the lead process until ``deadline`` (monotonic), reporting progress; True when it timed out."""
    while True:
        step = min(PROGRESS_INTERVAL_S, deadline - time.monotonic()) if progress else deadline - time.monotonic()
        if step <= 0:
            return True
        try:
            lead.wait(timeout=step)
            return False
        except subprocess.TimeoutExpired:
            if progress is not None and time.monotonic() < deadline:
                progress(Progress(time.monotonic() - started, expected_s, _count_lines(records)))


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(1 for _ in handle)
    except OSError:
        return 0


def role_env(config_path: Path, *, records: Path | None, api_key: str | None, worker_index: int = 0) -> dict[str, str]:
    env = dict(os.environ)
    env[CONFIG_ENV] = str(config_path)
    env[WORKER_INDEX_ENV] = str(worker_index)
    if records is not None:
        env[RECORDS_ENV] = str(records)
    if api_key:
        env[API_KEY_ENV] = api_key
    return env


def run(
    config: LoadConfig,
    out_dir: Path,
    *,
    api_key: str | None = None,
    remote_workers: bool = False,
    master_host: str = "127.0.0.1",
    master_port: int | None = None,
    expect_workers_s: float = EXPECT_WORKERS_WAIT_S,
    progress: Callable[[Progress], None] | None = None,
) -> RunResult:
    """Run ``config`` and return its records (the processes started here are gone on return).

    By default the master and ``config.workers`` workers run here on 127.0.0.1. With ``remote_workers``
    only the master runs here, bound to ``master_host:master_port``, and waits for the workers to dial in
    (the cluster's worker pods: ``inferctl loadtest run --role worker``) for up to ``expect_workers_s``.
    ``progress`` is called every ``PROGRESS_INTERVAL_S`` while the load runs (requests recorded so far).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    config_path = out_dir / "loadtest.json"
    config_path.write_text(config.to_json(), encoding="utf-8")
    records = out_dir / "requests.jsonl"
    records.write_text("", encoding="utf-8")
    port = master_port or (DEFAULT_MASTER_PORT if remote_workers else free_port())
    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs = []
    started = time.monotonic()
    timed_out = False
    try:
        if config.workers == 0:
            roles = [("local", "local", 0)]
        elif remote_workers:
            roles = [("master", "master", 0)]
        else:
            roles = [("master", "master", 0)] + [(f"worker-{i}", "worker", i) for i in range(config.workers)]
        for name, role, index in roles:
            log = open(out_dir / f"locust-{name}.log", "wb")  # noqa: SIM115 - closed below
            logs.append(log)
            processes[name] = subprocess.Popen(
                locust_argv(config, role, master_host=master_host, master_port=port, expect_workers_s=expect_workers_s),
                env=role_env(
                    config_path, records=records if role != "worker" else None, api_key=api_key, worker_index=index
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # Killed untidily, this process stops nothing: the kernel then sends each role a SIGTERM.
                preexec_fn=die_with_parent(),
            )
        lead = processes["local"] if config.workers == 0 else processes["master"]
        timed_out = _wait(lead, started + wall_bound_s(config, expect_workers_s=expect_workers_s), started,
                          run_time_s(config), records, progress)  # fmt: skip
        # Workers leave when the master quits; give them a moment, then make sure.
        deadline = time.monotonic() + 10
        for process in processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
    finally:
        for process in processes.values():
            stop_group(process, STOP_TIMEOUT_S)
        for log in logs:
            log.close()
    recorded = read_jsonl(records)
    if progress is not None:
        # The interim lines count what had arrived; this one is the total every report of the run counts.
        progress(Progress(time.monotonic() - started, run_time_s(config), len(recorded), done=True))
    return RunResult(
        records=recorded,
        exit_codes={
            name: (None if timed_out and name in ("local", "master") else p.returncode) for name, p in processes.items()
        },
        timed_out=timed_out,
        out_dir=out_dir,
        wall_s=time.monotonic() - started,
    )
