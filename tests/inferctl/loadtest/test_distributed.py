"""Locust in its distributed mode (one master, two workers) against the local OpenAI stack.

The server is the image's OpenAI server in front of the real tritonserver with the production ``tensorrt_llm``
model and the stand-in engine (tools/local_openai_stack.py), reached directly and through the real
Envoy edge with TLS and a bearer key. Every run is bounded in requests and time; the tests check what was
recorded, never how fast.
"""

from __future__ import annotations

import json

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.loadgen import records as rec
from inference_platform.loadgen.config import LoadConfig, Shape, SizeDistribution
from inference_platform.loadgen.runner import run
from tests.inferctl.serving.conftest import leftover_processes
from tools.local_openai_stack import OpenAIStack

pytestmark = [pytest.mark.triton, pytest.mark.timeout(300)]


@pytest.fixture
def server(shared_stack: OpenAIStack) -> OpenAIStack:
    return shared_stack  # the worker's one stack (tests/shared_stack.py)


def test_master_and_two_workers_ramp_through_the_edge_with_structured_requests_mixed_in(server, tmp_path):
    out = tmp_path / "ramp"
    key = tmp_path / "key"
    key.write_text(server.api_key, encoding="utf-8")
    code = main(
        [
            "loadtest", "run", "--url", server.edge.url, "--api-key-file", str(key),
            "--ca-file", str(server.edge.certificates.ca), "--shape", "ramp", "--steps", "1,2,4",
            "--step-seconds", "3", "--isl", "16:4", "--osl", "12:4", "--structured-share", "0.2",
            "--max-requests", "300", "--duration", "30", "--workers", "2",
            "--ttft-slo-ms", "5000", "--itl-slo-ms", "1000", "--out", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    records = rec.read_jsonl(out / "requests.jsonl")
    assert records and all(r.ok for r in records), [r.error for r in records if not r.ok][:3]
    assert {r.worker for r in records} == {"w0", "w1"}
    assert {r.load for r in records} == {1.0, 2.0, 4.0}
    assert any(r.kind == "structured" for r in records)
    assert all(r.ttft_ms is not None and r.output_tokens >= 1 for r in records)
    report = json.loads((out / "report.json").read_text())
    # The model came from GET /v1/models through the edge; the key went as a bearer token.
    assert report["config"]["model"] == server.served_model and report["config"]["api_key_header"] == "authorization"
    assert report["summary"]["requests"] == len(records) and report["summary"]["goodput"] == 1.0
    assert set(report["by_load"]) == {"1.0", "2.0", "4.0"}
    assert report["exit_codes"] == {"master": 0, "worker-0": 0, "worker-1": 0}
    assert (out / "latency.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert leftover_processes(str(out)) == []


def test_poisson_rate_stops_at_its_request_budget(server, tmp_path):
    config = LoadConfig(
        url=server.openai_url,
        model=server.served_model,
        shape=Shape(kind="rate", rate=20.0, concurrency=32),
        isl=SizeDistribution(mean=8),
        osl=SizeDistribution(mean=6, spread=2),
        max_requests=40,
        # Far beyond the test's own timeout: only the request budget can have ended the run.
        duration_s=3600.0,
        workers=2,
    )
    result = run(config, tmp_path / "rate")
    assert not result.timed_out
    assert len(result.records) == 40 and all(r.ok for r in result.records)
    assert {r.worker for r in result.records} == {"w0", "w1"}
    assert {r.load for r in result.records} == {20.0}
    assert result.exit_codes == {"master": 0, "worker-0": 0, "worker-1": 0}


def test_bad_flags_exit_2_naming_them(capsys):
    code = main(["loadtest", "run", "--url", "http://127.0.0.1:1", "--shape", "rate", "--rate", "0",
                 "--concurrency", "0", "--max-requests", "5", "--duration", "5"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--rate: got 0" in err and "--concurrency: got 0" in err


def test_roles_as_the_cluster_runs_them_master_here_workers_as_their_own_processes(server, tmp_path):
    """What the master Job and the workers' Indexed Job run, on 127.0.0.1: each worker is its own
    ``inferctl loadtest run --role worker`` process with its completion index in the environment."""
    import os
    import subprocess
    import sys

    from inference_platform.processes import die_with_parent, free_port

    port = free_port()
    common = ["--url", server.openai_url, "--shape", "concurrency", "--concurrency", "4", "--isl", "8", "--osl", "6",
              "--max-requests", "30", "--duration", "30", "--workers", "2", "--master-host", "127.0.0.1",
              "--master-port", str(port)]  # fmt: skip
    workers = []
    try:
        for index in range(2):
            env = {**os.environ, "JOB_COMPLETION_INDEX": str(index)}
            argv = [sys.executable, "-m", "inference_platform.inferctl", "loadtest", "run", *common, "--role", "worker",
                    "--out", str(tmp_path / f"worker-{index}")]  # fmt: skip
            log = open(tmp_path / f"worker-{index}.log", "wb")  # noqa: SIM115 - closed with the process
            workers.append(
                (
                    subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent()),
                    log,
                )
            )
        code = main(["loadtest", "run", *common, "--role", "master", "--out", str(tmp_path / "master")])
        for process, _ in workers:
            process.wait(timeout=30)  # they leave when the master quits
    finally:
        for process, log in workers:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
            log.close()
    assert code == 0
    records = rec.read_jsonl(tmp_path / "master" / "requests.jsonl")
    assert len(records) == 30 and all(r.ok for r in records)
    assert {r.worker for r in records} == {"w0", "w1"}
    assert (tmp_path / "master" / "latency.png").is_file() and (tmp_path / "master" / "report.json").is_file()
    assert [p.returncode for p, _ in workers] == [0, 0]
