"""Showback (issue 30): `inferctl usage` on a real Prometheus scraping the series as the OpenAI server publishes them
(its own ServerMetrics) and as the batch workers publish theirs (batch/usage.py): exact month-to-date tokens per
client, model and lane, the direct (client ``none``) traffic left out, the cost at each lane's price, and a series
older than the window counted from its value at the window's start."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from prometheus_client import REGISTRY, generate_latest

from inference_platform.batch import objects, usage
from inference_platform.inferctl.usage.showback import Month, Report, Row, month_to_date, prometheus_query
from inference_platform.inference_image.openai_api.metrics import ServerMetrics
from inference_platform.processes import free_port
from tests.system_tools import require_tool
from tools.prometheus_server import Prometheus, Target, running_prometheus

pytestmark = [pytest.mark.timeout(300)]

INFERCTL = [sys.executable, "-m", "inference_platform.inferctl"]
MODEL = "Llama-3.1-8B"
SETTLE_S = 60.0


@pytest.fixture
def exporter() -> Iterator[tuple[str, ServerMetrics]]:
    """The server's registry on /server, the workers' (the process registry) on /batch."""
    metrics = ServerMetrics(MODEL, [0.1, 1.0])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = generate_latest(metrics.registry if self.path == "/server" else REGISTRY)
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", metrics
    finally:
        server.shutdown()
        thread.join(timeout=5)


def _serve(metrics: ServerMetrics, client: str, prompt: int, completion: int, cached: int) -> None:
    record = metrics.start(client=client, started=time.monotonic(), prompt_tokens=prompt)
    usage_ = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    record.finish(usage_, None, ["stop"])


def _batch_line(client: str, prompt: int, completion: int) -> None:
    body = {"model": MODEL, "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}
    line = objects.response_line(batch_id="b", line=1, custom_id="c", status_code=200, request_id_="r", body=body)
    assert usage.record(client, line) is not None


def _until(prom: Prometheus, expr: str, want: float) -> None:
    """Until Prometheus' latest sample of ``expr`` is ``want`` (bounded; the assertion after shows the value)."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline and prom.scalar(expr) != want:
        time.sleep(0.25)
    assert prom.scalar(expr) == want


def _usage(prom: Prometheus, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [*INFERCTL, "usage", "--prometheus", prom.url, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_usage_shows_each_clients_exact_tokens_and_cost_per_lane(tmp_path, exporter):
    address, metrics = exporter
    # Unique clients: the workers' counter is the process's, shared with other tests.
    alpha, beta = f"alpha{free_port()}", f"beta{free_port()}"
    _serve(metrics, alpha, 100, 40, 30)
    _serve(metrics, beta, 10, 5, 0)
    _serve(metrics, "none", 999, 1, 0)  # the batch workers' own calls, straight to the replica
    _batch_line(alpha, 200, 80)
    targets = [Target("server", address, {"namespace": "inference"}), Target("batch", address, {"namespace": "batch"})]
    prometheus = require_tool("prometheus")
    with running_prometheus(prometheus, tmp_path / "prom", free_port(), targets, [],
                            metrics_path={"server": "/server", "batch": "/batch"}) as prom:  # fmt: skip
        alpha_prompt = f'vllm:prompt_tokens_total{{client="{alpha}"}}'
        _until(prom, alpha_prompt, 100)
        _until(prom, f'batch_tokens_total{{client="{alpha}",kind="prompt"}}', 200)
        # A window that starts after the series was created: counted from its value at the start.
        since = time.time()
        _until(prom, f"count(timestamp({alpha_prompt}) > {since:.3f})", 1)
        _serve(metrics, alpha, 50, 10, 0)
        _until(prom, alpha_prompt, 150)
        window = math.ceil(time.time() - since)
        later = prom.scalar(
            month_to_date("vllm:prompt_tokens_total", f'client="{alpha}"', window, time.time() - window)
        )
        assert later == 50

        done = _usage(prom, "--usd-per-m-interactive", "2", "--usd-per-m-batch", "0.5", "--json")
        assert done.returncode == 0, done.stderr
        rows = {(r["client"], r["lane"]): r for r in json.loads(done.stdout)["rows"]}
        assert not any(c == "none" for c, _ in rows)
        mine = {k: v for k, v in rows.items() if k[0] in (alpha, beta)}
        assert {k: (v["prompt"], v["completion"], v["cached"], v["model"]) for k, v in mine.items()} == {
            (alpha, "interactive"): (150, 50, 30, MODEL),
            (alpha, "batch"): (200, 80, 0, MODEL),
            (beta, "interactive"): (10, 5, 0, MODEL),
        }
        assert mine[(alpha, "interactive")]["usd"] == pytest.approx(200 * 2 / 1e6)
        assert mine[(alpha, "batch")]["usd"] == pytest.approx(280 * 0.5 / 1e6)
        table = _usage(prom)
        assert table.returncode == 0 and "unpriced" in table.stdout and alpha in table.stdout, table.stderr

        # Bad input: one line naming the flag, exit 2; no Prometheus: exit 1.
        for args, flag in ((["--month", "2026-13"], "--month"), (["--usd-per-m-batch", "-1"], "--usd-per-m-batch"),
                           (["--month", "2999-01"], "--month")):  # fmt: skip
            bad = _usage(prom, *args)
            assert bad.returncode == 2 and flag in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    gone = subprocess.run([*INFERCTL, "usage", "--prometheus", prom.url], capture_output=True, text=True, timeout=60)
    assert gone.returncode == 1 and "--prometheus" in gone.stderr and "Traceback" not in gone.stderr


def test_budget_used_sums_both_lanes_prompt_and_completion_tokens():
    rows = [Row("acme", "m", "interactive", {"prompt": 600, "completion": 200, "cached": 500}),
            Row("acme", "m", "batch", {"prompt": 150, "completion": 50, "cached": 0})]  # fmt: skip
    rep = Report(month=Month(2026, 12), at=datetime(2026, 12, 5, tzinfo=UTC), rows=rows,
                 budgets={"acme": 4000}, prices={"interactive": None, "batch": None})  # fmt: skip
    assert rep.budget_used("acme") == 0.25 and rep.budget_used("zed") is None
    assert rep.to_json()["budgets"] == {"acme": {"tokensPerMonth": 4000, "used": 0.25}}


def test_prometheus_query_names_what_failed():
    from inference_platform.inferctl.usage.showback import PrometheusUnavailable

    with pytest.raises(PrometheusUnavailable):
        prometheus_query(f"http://127.0.0.1:{free_port()}", timeout=2)("up", time.time())
