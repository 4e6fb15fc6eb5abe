"""guidellm, the benchmark client, through the real local edge (TLS checked against the local CA, API key) to the local
stack (issue 27, "Proven here, running": guidellm with streaming, 0 errors).

Before issue 27 guidellm got 0 successes in 3,913 streamed requests: it sends ``stream_options.continuous_usage_stats``
and ``ignore_eos``, which the server refused. Here the released guidellm runs its own benchmark from its own locked
virtualenv (``make guidellm``: requirements-guidellm.txt, PyTorch's CPU build) as a user would run it: a synthetic
dataset of short prompts, streaming chat completions at a constant rate, a bounded number of requests (a few seconds
of load on the shared stack's stand-in pacing). Its own report must show every request completed, none errored, and
each answer exactly what the stand-in engine produces for it; the server's own token counters must agree.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tokenizers import Tokenizer

from inference_platform.catalog import server_metrics
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import EOT
from inference_platform.inference_image.testing.cpu_llm_api.text import echo_text
from tools.lockfile import LOCKS, read_lock

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(600)]
REPO = Path(__file__).resolve().parents[3]
GUIDELLM = REPO / ".venv-guidellm" / "bin" / "guidellm"
READ_AT = "0.8.1"
"""The guidellm release whose sources this file cites (scenario schema, request body, report); locks/guidellm.txt pins
it. When the lock moves, re-read them at the new tag: guidellm/schemas/benchmark/entrypoints.py, schemas/backends/
openai_http.py, backends/openai/request_handlers.py (the chat body), settings.py (max_worker_processes), then the
report's keys asserted below."""
REQUESTS = 24
RATE_PER_S = 8
"""24 requests at 8 a second: 3 s of load, about 6 in flight at the shared stack's 3 ms a token."""
PROMPT_TOKENS = 16
OUTPUT_TOKENS = 40
"""Longer than the echo (the stand-in's answer, ~15 byte tokens): only ``ignore_eos`` takes it past its end token."""
RUN_TIMEOUT_S = 300
"""guidellm's start (2 worker processes importing torch and transformers) takes most of it on 2 busy cores."""
COUNTERS = (server_metrics.PROMPT_TOKENS, server_metrics.GENERATION_TOKENS, server_metrics.REQUEST_SUCCESS)


@pytest.fixture(scope="module")
def stack(shared_stack):
    if not GUIDELLM.exists():
        pytest.fail("guidellm's virtualenv is missing: run `make guidellm` (make test does)")
    return shared_stack


def scenario(stack, report: Path) -> dict:
    """guidellm 0.8.1's scenario file (``guidellm run --scenario``; its schema: guidellm/schemas/benchmark/
    entrypoints.py ``BenchmarkArgs``, the openai_http backend's guidellm/schemas/backends/openai_http.py)."""
    return {
        "spec": {
            "backend": {
                "kind": "openai_http",
                "target": f"{stack.edge.url}/v1",
                "model": stack.served_model,
                "api_key": stack.api_key,
                "request_format": "/v1/chat/completions",
                "stream": True,
                "verify": True,  # guidellm's default is False: check the edge's certificate against the local CA
            },
            "profile": {"kind": "constant", "rate": [RATE_PER_S]},
            "constraints": [{"kind": "max_requests", "count": REQUESTS}],
            "tokenizer": {"kind": "huggingface_auto", "model": str(stack.model.checkpoint)},
            "data": [{"kind": "synthetic_text", "prompt_tokens": PROMPT_TOKENS, "output_tokens": OUTPUT_TOKENS}],
            "outputs": [{"kind": "json", "path": str(report)}],
        }
    }


def test_the_cited_guidellm_is_the_locked_one():
    (pin,) = [p for p in read_lock(LOCKS / "guidellm.txt") if p.name == "guidellm"]
    assert pin.version == READ_AT, f"locks/guidellm.txt pins guidellm {pin.version}: {READ_AT}'s sources are cited here"


def server_counters(stack) -> dict[str, float]:
    """The OpenAI server's token and request counters, summed over the requests the edge labelled with a client."""
    with urllib.request.urlopen(f"{stack.openai_url}/metrics", timeout=5) as response:
        page = response.read().decode()
    totals = dict.fromkeys(COUNTERS, 0.0)
    for family in text_string_to_metric_families(page):
        if family.name in totals:
            totals[family.name] += sum(
                s.value for s in family.samples
                if s.name.endswith("_total") and s.labels.get(server_metrics.CLIENT_LABEL, "none") != "none"
            )  # fmt: skip
    return totals


def stand_in_answer(tokenizer: Tokenizer, user_text: str, max_tokens: int) -> str:
    """What the stand-in streams for a greedy chat request with ``ignore_eos``: the user's text (text.py
    ``echo_text``), its tokens then the end token, over and over (executor.py ``_source``), cut at ``max_tokens``;
    the end token is special, so the text skips it."""
    body = tokenizer.encode(echo_text(user_text, ()), add_special_tokens=False).ids
    end = tokenizer.token_to_id(EOT)
    assert end is not None, f"the checkpoint's tokenizer has no {EOT}"
    tokens = list(itertools.islice(itertools.cycle([*body, end]), max_tokens))
    return tokenizer.decode(tokens, skip_special_tokens=True)


def test_guidellm_benchmarks_streaming_chat_through_the_edge_with_no_errors(stack, tmp_path):
    report = tmp_path / "benchmarks.json"
    config = tmp_path / "scenario.json"
    config.write_text(json.dumps(scenario(stack, report)))
    config.chmod(0o600)  # it holds the API key
    env = dict(
        os.environ,
        SSL_CERT_FILE=str(stack.edge.certificates.ca),  # httpx (guidellm's client) trusts it with verify=True
        NO_PROXY="127.0.0.1,localhost",
        HF_HUB_OFFLINE="1",  # the tokenizer is the local checkpoint's; nothing may reach a hub
        GUIDELLM__MAX_WORKER_PROCESSES="2",  # its default is 10 processes, on a 2-core machine
    )
    before = server_counters(stack)
    argv = [str(GUIDELLM), "run", "--scenario", str(config), "--disable-progress"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    after = server_counters(stack)

    results = json.loads(report.read_text())
    assert results["metadata"]["guidellm_version"] == READ_AT
    (benchmark,) = results["benchmarks"]
    totals = benchmark["metrics"]["request_totals"]
    # guidellm 0.8.1's max_requests (scheduler/constraints/request.py MaxNumberConstraint) stops queuing at the
    # count created and each worker process's processing at the count it saw processed: with 2 processes on a busy
    # machine a run ended at 23 of 24. What it sent must all succeed, and the server must count exactly those.
    sent = totals["total"]
    assert REQUESTS - 2 <= sent <= REQUESTS, done.stdout[-4000:]
    assert totals == {"successful": sent, "errored": 0, "incomplete": 0, "total": sent}, done.stdout[-4000:]
    assert benchmark["config"]["strategy"]["type_"] == "constant" and benchmark["config"]["backend"]["verify"] is True

    tokenizer = Tokenizer.from_file(str(stack.model.checkpoint / "tokenizer.json"))
    requests = benchmark["requests"]["successful"]
    assert len(requests) == sent
    for request in requests:
        body = json.loads(request["request_args"])["body"]
        # guidellm's own request shape, the one the server refused before issue 27
        assert body["stream"] is True and body["stream_options"]["continuous_usage_stats"] is True, body
        assert body["ignore_eos"] is True and body["max_completion_tokens"] == OUTPUT_TOKENS, body
        ((part,),) = [m["content"] for m in body["messages"]]
        assert request["info"]["status"] == "completed" and request["info"]["error"] is None, request["info"]
        assert request["output"] == stand_in_answer(tokenizer, part["text"], OUTPUT_TOKENS), request
        assert request["output_metrics"]["text_tokens"] == OUTPUT_TOKENS, request["output_metrics"]
        assert request["info"]["timings"]["token_iterations"] >= 1  # the answer arrived as a stream

    # The server counted what guidellm reports: every request succeeded, through the edge (client-labelled). The
    # same constraint can also drop a request a worker process had already sent from the report: a make test run
    # reported 23 while the server had answered 24 (960 = 24 x 40 tokens). So the server answered at least what was
    # reported and at most what was created, each answer whole.
    moved = {name: after[name] - before[name] for name in COUNTERS}
    served = moved[server_metrics.REQUEST_SUCCESS]
    assert sent <= served <= REQUESTS, moved
    assert moved[server_metrics.GENERATION_TOKENS] == served * OUTPUT_TOKENS, moved
    reported_prompt = sum(r["input_metrics"]["text_tokens"] for r in requests)
    if served == sent:
        assert moved[server_metrics.PROMPT_TOKENS] == reported_prompt, moved
    else:
        assert moved[server_metrics.PROMPT_TOKENS] > reported_prompt, moved
