"""``inferctl verify`` against the local OpenAI stack (the image's OpenAI server, the real CPU Triton with the
production ``tensorrt_llm`` model and the stand-in engine, the real Envoy edge with TLS and keys): through the edge
it passes with generous SLOs and fails with impossible ones, it fails (without hanging) when Triton dies mid-run,
and it refuses bad input with exit 2 naming the flag."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_platform.inferctl.cli import main
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.processes import die_with_parent
from inference_platform.settings import stack_files
from tools.local_openai_stack import OpenAIStack, openai_stack

pytestmark = [pytest.mark.triton, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[3]
PREFIX = "inference-platform:"
# A short, small load: the tests prove the verdict's logic, not the server's speed.
SMALL_LOAD = {
    "concurrencyPerReplica": 4,
    "durationSeconds": 6,
    "maxDurationSeconds": 60,
    "maxRequests": 80,
    "requestTimeoutSeconds": 20,
    "isl": {"mean": 16, "spread": 4},
    "osl": {"mean": 16, "spread": 4},
    "structuredShare": 0.2,
}


def stack_file(tmp_path: Path, *, slo: dict[str, float] | None = None, stack: str = "dev", **verification: Any) -> Path:
    doc = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    config = doc["config"]
    config[PREFIX + "verification"] = {**SMALL_LOAD, **verification}
    if slo is not None:
        config[PREFIX + "serving"] = {**config[PREFIX + "serving"], "slo": slo}
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


FAST = Timing(first_token_delay_ms=10, token_delay_ms=3)
"""The stand-in's delays of the calibration fixture's stack (tests/data/calibrate/make_fixture.py)."""


@pytest.fixture
def server(shared_stack: OpenAIStack) -> OpenAIStack:
    return shared_stack  # the worker's one stack, with its edge (tests/shared_stack.py)


def through_edge(stack: OpenAIStack, tmp_path: Path) -> list[str]:
    """The flags that send verify through the local edge with the stack's client key."""
    key_file = tmp_path / "key"
    key_file.write_text(stack.api_key or "", encoding="utf-8")
    assert stack.edge is not None
    return ["--url", stack.edge.url, "--api-key-file", str(key_file), "--ca-file", str(stack.edge.certificates.ca)]


def verify(*args: str) -> int:
    return main(["verify", "--stack", "dev", *args])


def test_generous_slos_pass_with_report_and_chart(server, tmp_path, capsys):
    out = tmp_path / "out"
    code = verify("--stack-file", str(stack_file(tmp_path)), *through_edge(server, tmp_path), "--workers", "2",
                  "--log-file", str(server.logs["openai"]), "--out", str(out))  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "VERDICT: PASS" in printed
    report = json.loads((out / "verify.json").read_text())
    assert report["verdict"]["passed"] is True
    # The OpenAI API end to end: the model found in /v1/models, prompts sized by the server's usage counts.
    assert report["load"]["config"]["model"] == server.served_model
    assert report["load"]["config"]["protocol"] == "openai"
    assert report["prompt_sizing"]["source"] == "usage.prompt_tokens"
    assert any(c.startswith("chat completion streams") for c in report["smoke"]["checks"])
    planned = report["load"]["at_planned_concurrency"]
    assert planned["requests"] > 0 and planned["errors"] == 0 and planned["goodput"] == 1.0
    assert set(report["load"]["by_load"]) == {"1.0", "2.0", "4.0"}  # ramp: 1/4, 1/2, all of 4
    assert report["load"]["overall"]["structured"] > 0
    checks = {c["name"]: c["ok"] for c in report["verdict"]["checks"]}
    assert checks["smoke"] and checks["logs"] and checks["goodput"] and checks["TTFT p95"]
    assert checks["rate limits"] is True  # through the edge: X-RateLimit headers on the client's answer
    assert checks["GPU utilisation"] is None  # no Prometheus given: reported, not failed
    assert (out / "latency.png").read_bytes()[:4] == b"\x89PNG"


def test_impossible_slos_fail_with_exit_1(server, tmp_path, capsys):
    impossible = {"ttftP50Ms": 0.001, "ttftP95Ms": 0.001, "itlP50Ms": 0.001, "minOutputTokensPerSecond": 1e6}
    out = tmp_path / "out"
    path = stack_file(tmp_path, slo=impossible)
    # An SLO no modelled replica can hold is a settings problem of an autoscaled stack (the ramp check,
    # settings/cold_start.py): this test wants a stack that loads and a server that misses it.
    doc = yaml.safe_load(path.read_text())
    doc["config"][PREFIX + "autoscaling"] = {**doc["config"].get(PREFIX + "autoscaling", {}), "enabled": False}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    code = verify("--stack-file", str(path), *through_edge(server, tmp_path), "--out", str(out))
    printed = capsys.readouterr().out
    assert code == 1
    assert "VERDICT: FAIL" in printed
    failed = {c["name"] for c in json.loads((out / "verify.json").read_text())["verdict"]["checks"] if c["ok"] is False}
    assert {"TTFT p50", "TTFT p95", "ITL p50", "tokens/s per request"} <= failed
    assert "goodput" not in failed and "errors" not in failed


def test_a_server_killed_mid_run_fails_the_verdict_with_errors_counted(tmp_path):
    # Its own slower stack (the stand-in's default delays), so that requests are in flight when Triton dies; the
    # OpenAI server itself stays up and answers 503 or cuts the streams, as a pod whose engine crashed would.
    work = tmp_path / "openai"
    out = tmp_path / "out"
    # Long enough that the load outlives the crash (it starts once the first answer is recorded), short enough
    # not to keep failing for long after it: both counts below only need to be non-zero.
    stack = stack_file(tmp_path, durationSeconds=8, maxRequests=400)
    with openai_stack(stack_files.load("dev"), work, Timing(), edge=False) as running:
        argv = [sys.executable, "-m", "inference_platform.inferctl", "verify", "--stack", "dev", "--stack-file", str(stack),
                "--url", running.openai_url, "--out", str(out)]  # fmt: skip
        verify_process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO, preexec_fn=die_with_parent()
        )
        try:
            records = out / "requests.jsonl"
            deadline = time.monotonic() + 120
            while not (records.is_file() and records.stat().st_size > 0):
                assert verify_process.poll() is None, verify_process.stdout.read().decode()
                assert time.monotonic() < deadline, "the load never started"
                time.sleep(0.2)
            os.killpg(running_pid(work), signal.SIGKILL)  # a crash, not a drain
            output, _ = verify_process.communicate(timeout=150)
        finally:
            if verify_process.poll() is None:
                verify_process.kill()
                verify_process.wait(timeout=10)
    text = output.decode()
    assert verify_process.returncode == 1, text
    report = json.loads((out / "verify.json").read_text())
    overall = report["load"]["overall"]
    assert overall["errors"] > 0 and overall["requests"] > overall["errors"]
    failed = {c["name"] for c in report["verdict"]["checks"] if c["ok"] is False}
    assert "errors" in failed or "load" in failed
    assert report["load"]["exit_codes"] and not any(code is None for code in report["load"]["exit_codes"].values())


def running_pid(work: Path) -> int:
    """The tritonserver serving from ``work`` (its process group leader)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline and cmdline[0].endswith(b"tritonserver") and str(work).encode() in b" ".join(cmdline):
            return int(entry.name)
    raise AssertionError(f"no tritonserver of {work} found")


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--concurrency", "0"], "--concurrency: got 0"),
        (["--concurrency", "-3"], "--concurrency: got -3"),
        (["--rate", "0"], "--rate: got 0"),
        (["--duration", "61"], "--duration: got 61 s; the ceiling is 60 s"),
        (["--url", "ftp://127.0.0.1:1"], "--url"),
        (["--protocol", "triton"], "--protocol: got 'triton', which is retired; use the OpenAI API"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(tmp_path, capsys, flags, named):
    argv = ["--stack-file", str(stack_file(tmp_path)), "--url", "http://127.0.0.1:1", *flags]
    assert verify(*argv) == 2
    assert named in capsys.readouterr().err


def test_production_needs_tls(tmp_path, capsys):
    code = main(["verify", "--stack", "prod", "--stack-file", str(stack_file(tmp_path, stack="prod")),
                 "--url", "http://api.example.com", "--api-key", "k"])  # fmt: skip
    assert code == 2
    assert "--url: got 'http://api.example.com'; a production stack is verified through TLS" in capsys.readouterr().err
