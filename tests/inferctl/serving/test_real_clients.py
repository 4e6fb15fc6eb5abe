"""Real clients nobody here wrote, through the real local edge (TLS, API key) to the local stack (issue 27, "Proven
here, running"): aiperf streaming with no errors, LangChain ``bind_tools`` and ``with_structured_output``, instructor
in its default tools mode, litellm with ``tools=``. They run from their own virtualenv (``make clients``;
requirements-clients.txt says why); guidellm runs from one of its own (test_guidellm_through_the_edge.py).
The local CA is trusted the way any client trusts it: ``SSL_CERT_FILE``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest

from tests.inferctl.serving.real_clients_driver import WEATHER_SCHEMA

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[3]
CLIENTS = REPO / ".venv-clients" / "bin"
DRIVER = Path(__file__).with_name("real_clients_driver.py")
CLIENT_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def stack(shared_stack):
    if not (CLIENTS / "python").exists():
        pytest.fail("the real clients' virtualenv is missing: run `make clients` (make test does)")
    return shared_stack


def _env(stack) -> dict[str, str]:
    return dict(os.environ, SSL_CERT_FILE=str(stack.edge.certificates.ca), NO_PROXY="127.0.0.1,localhost")


def _drive(stack, check: str) -> dict:
    argv = [str(CLIENTS / "python"), str(DRIVER), f"{stack.edge.url}/v1", stack.api_key, stack.served_model, check]
    done = subprocess.run(argv, env=_env(stack), capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_aiperf_streams_chat_through_the_edge_with_no_errors(stack, tmp_path):
    argv = [
        str(CLIENTS / "aiperf"), "profile", "--model", stack.served_model, "--url", stack.edge.url,
        "--endpoint-type", "chat", "--streaming", "--request-count", "24", "--concurrency", "6",
        "--api-key", stack.api_key, "--tokenizer", str(stack.model.checkpoint), "--synthetic-input-tokens-mean", "64",
        "--output-tokens-mean", "16", "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry",
        "--artifact-dir", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(argv, env=_env(stack), capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "profile_export_aiperf.json").read_text())
    assert results["request_count"]["avg"] == 24, results.get("request_count")
    errors = results.get("error_request_count", {}).get("avg", 0)
    assert errors == 0, (tmp_path / "profile_export_aiperf.json").read_text()[:3000]
    assert results["time_to_first_token"]["avg"] > 0 and results["inter_token_latency"]["avg"] > 0


def test_langchain_bind_tools_gets_tool_calls(stack):
    out = _drive(stack, "langchain_bind_tools")
    assert len(out["forced"]) == 1, out
    (call,) = out["forced"]
    assert call["name"] == "get_weather" and set(call["args"]) == {"city", "days"}
    assert out["auto_calls"] == [] and out["auto_content"]


def test_langchain_with_structured_output_validates(stack):
    out = _drive(stack, "langchain_structured")
    for key in ("json_schema", "function_calling"):
        assert set(out[key]) == {"city", "days"} and isinstance(out[key]["days"], int)


def test_instructor_in_its_default_tools_mode_returns_the_model(stack):
    out = _drive(stack, "instructor_tools")
    assert out["mode"].endswith("TOOLS") and set(out["forecast"]) == {"city", "days"}


def test_litellm_tools_and_streaming(stack):
    out = _drive(stack, "litellm_tools")
    (call,) = out["calls"]
    assert call["name"] == "get_weather" and out["finish_reason"] == "tool_calls"
    jsonschema.validate(json.loads(call["arguments"]), WEATHER_SCHEMA)
    assert out["streamed"] == "stream this back"
