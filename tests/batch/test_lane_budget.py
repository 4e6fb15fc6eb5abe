"""One monthly budget across both lanes (issue 30), proven running: the real local Envoy edge with the metering
script and the rate-limit service's stand-in, the Batch API and a worker on moto's S3 and SQS, both given
``BATCH_BUDGETS`` as the cluster renders it (``components.edge.token_limits.batch_budgets``), the real CPU Triton
behind our OpenAI server, the official ``openai`` client.

A client's batch lines debit its budget's counter at the batch weight, exactly once per answered line (one
``ShouldRateLimit`` per line, with the very descriptor the edge sends); the interactive lane then sees the reduced
budget (``x-ratelimit-remaining``); once the budget is spent by interactive answers, both lanes refuse it: the
edge with 429, the Batch API with 429 in OpenAI's error shape before anything is queued, and a batch admitted
while the budget was open but run after it was spent files its lines as ``insufficient_quota``, none sent or
debited. A client without a budget is never refused."""

from __future__ import annotations

import dataclasses
import json
import time
from datetime import UTC, datetime
from typing import Any

import openai
import pytest

from inference_platform.catalog.token_limits import PERIOD_HEADER
from inference_platform.components.batch.edge_routes import ROUTE_KEY, route_group
from inference_platform.components.edge.token_limits import batch_budgets, debits
from inference_platform.inferctl.serving.edge_envoy import Upstream
from inference_platform.inferctl.serving.local_edge import generate_keys, run_edge
from inference_platform.inferctl.serving.rate_limit_service import read_ledger
from inference_platform.processes import free_port
from inference_platform.settings import load_settings
from tests.batch.lane_requests import chat_line, file_lines, jsonl, wait_finished

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.motoserver, pytest.mark.timeout(600)]

LOOPBACK = "127.0.0.1"
TAGS = {"owner": "team", "costCenter": "cc-1"}
BUDGET = 1200
LINES = 12
LATE_LINES = 3
WEIGHTS = {"input": 1, "cached": 1, "output": 2, "batch": 0.5}
SETTLE_S = 20.0


def _policy() -> Any:
    edge = {
        "auth": {"clients": {"alpha": {"tier": "std"}, "beta": {"tier": "std"}}},
        "rateLimits": {"tiers": {"std": {"requestsPerMinute": 10_000}}},
        "tokenLimits": {"tokensPerMinute": None, "clients": {"alpha": {"tokensPerMonth": BUDGET}}, "weights": WEIGHTS},
    }
    settings = load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2")
    policy = settings.edge.policy(max_input_tokens=settings.serving.max_input_len)
    return dataclasses.replace(policy, extra_routes=(route_group(),))


def _month(ledger_path: Any, policy: Any, expected: int | None = None) -> int:
    """alpha's Month debits in the stand-in's ledger, once the expected total has arrived (bounded)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        found = debits(read_ledger(ledger_path), policy).get("alpha", {}).get("Month", 0)
        if expected is None or found == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_batch_lines_debit_the_edges_budget_at_the_batch_weight_and_both_lanes_refuse_when_spent(
    shared_stack, lane_factory, tmp_path
):
    policy = _policy()
    weights = policy.tokens.weights
    rls_port = free_port()
    budgets = json.dumps(batch_budgets(policy, address=f"{LOOPBACK}:{rls_port}"))
    lane = lane_factory()
    api = lane.api(BATCH_BUDGETS=budgets)
    worker = lane.worker("worker-1", BATCH_SERVING_URL=shared_stack.openai_url, BATCH_CONCURRENCY="4",
                         BATCH_BUDGETS=budgets)  # fmt: skip
    keys = generate_keys(policy)
    openai_port = int(shared_stack.openai_url.rsplit(":", 1)[1])
    api_port = int(api.url.rsplit(":", 1)[1])
    with run_edge(
        policy, keys=keys, upstream=Upstream(address=LOOPBACK, port=openai_port), work_dir=tmp_path / "edge",
        address=LOOPBACK, port=free_port(), admin_port=free_port(),
        extra_upstreams={ROUTE_KEY: Upstream(address=LOOPBACK, port=api_port)}, rate_limit_port=rls_port,
    ) as edge:  # fmt: skip
        assert edge.rate_limit_ledger is not None
        http = openai.DefaultHttpxClient(verify=str(edge.certificates.ca))

        def client(name: str) -> openai.OpenAI:
            return openai.OpenAI(base_url=f"{edge.url}/v1", api_key=keys[name], http_client=http, max_retries=0,
                                 timeout=60)  # fmt: skip

        alpha, beta = client("alpha"), client("beta")
        model = shared_stack.served_model
        lines = [chat_line(i, model=model, max_tokens=8) for i in range(LINES)]
        uploaded = alpha.files.create(file=jsonl(lines), purpose="batch")
        batch = alpha.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        done = wait_finished(alpha, batch.id, timeout=300)
        assert done.status == "completed" and done.request_counts.completed == LINES, done
        output = file_lines(alpha, done.output_file_id)
        usages = [o["response"]["body"]["usage"] for o in output]
        charges = [
            weights.batch_charge(
                u["prompt_tokens"],
                u["completion_tokens"],
                (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
            )
            for u in usages
        ]
        expected = sum(charges)
        # The batch weight: half the interactive charge of the same usage, rounded up per line.
        assert expected < sum(weights.charge(u["prompt_tokens"], u["completion_tokens"]) for u in usages)
        assert _month(edge.rate_limit_ledger, policy, expected) == expected < BUDGET
        # Exactly once per answered line: one debit call per line, each the line's own charge, this month's period.
        this_month = datetime.now(UTC).strftime("%Y-%m")
        calls = [
            d
            for call in read_ledger(edge.rate_limit_ledger)
            for d in call["descriptors"]
            if d["hits"] > 0 and any(v == this_month for _, v in d["entries"])
        ]
        assert sorted(d["hits"] for d in calls) == sorted(charges)
        # The worker counts a debit once the service answered it (after the ledger line): wait for the last one.
        deadline = time.monotonic() + SETTLE_S
        while worker.metric("batch_budget_calls_total", call="debit", outcome="ok") < LINES:
            assert time.monotonic() < deadline, "the worker did not count its debits"
            time.sleep(0.2)
        assert worker.metric("batch_budget_calls_total", call="debit", outcome="ok") == LINES
        # A batch admitted now, while the budget is open, whose lines wait in the queue (no worker) until it is spent.
        assert worker.terminate() == 0
        late_file = alpha.files.create(file=jsonl(lines[:LATE_LINES]), purpose="batch")
        late = alpha.batches.create(input_file_id=late_file.id, endpoint="/v1/chat/completions",
                                    completion_window="24h")  # fmt: skip

        # The interactive lane sees the reduced budget: its request-path check reports what is left.
        chat = {"model": model, "messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 30}
        raw = alpha.chat.completions.with_raw_response.create(**chat)
        assert raw.headers.get_list("x-ratelimit-remaining")[0].split(",")[0] == str(BUDGET - expected)
        answer = raw.parse()
        assert answer.usage is not None
        spent = expected + weights.charge(answer.usage.prompt_tokens, answer.usage.completion_tokens)
        while spent <= BUDGET:  # spend the rest interactively (the period header a client sends is overwritten)
            answer = alpha.chat.completions.create(**chat, extra_headers={PERIOD_HEADER: "1999-01"})
            assert answer.usage is not None
            spent += weights.charge(answer.usage.prompt_tokens, answer.usage.completion_tokens)
        assert _month(edge.rate_limit_ledger, policy, spent) == spent

        # The late batch's lines run now: refused line by line, never sent to the server, never debited.
        later = lane.worker("worker-2", BATCH_SERVING_URL=shared_stack.openai_url, BATCH_CONCURRENCY="4",
                            BATCH_BUDGETS=budgets)  # fmt: skip
        finished = wait_finished(alpha, late.id, timeout=120)
        assert (finished.status, finished.request_counts.completed, finished.request_counts.failed) == (
            "completed", 0, LATE_LINES), finished  # fmt: skip
        refused_lines = file_lines(alpha, finished.error_file_id)
        assert {e["error"]["code"] for e in refused_lines} == {"insufficient_quota"}
        assert all(this_month in e["error"]["message"] for e in refused_lines)
        assert later.metric("batch_requests_total", status="budget") == LATE_LINES
        assert later.metric("batch_budget_calls_total", call="debit", outcome="ok") == 0
        # Nothing sent: the worker's serving-call histogram is empty; nothing charged: the month's counter as it was.
        assert later.metric("batch_request_duration_seconds_count") == 0
        assert _month(edge.rate_limit_ledger, policy) == spent

        # Spent: the edge refuses alpha, and so does the Batch API, before anything is queued.
        with pytest.raises(openai.RateLimitError) as edge_refused:
            alpha.chat.completions.create(**chat)
        assert edge_refused.value.response.json()["error"]["code"] == "insufficient_quota"
        second = alpha.files.create(file=jsonl(lines[:2]), purpose="batch")
        with pytest.raises(openai.RateLimitError) as refused:
            alpha.batches.create(input_file_id=second.id, endpoint="/v1/chat/completions", completion_window="24h")
        error = refused.value.response.json()["error"]
        assert error["code"] == "insufficient_quota" and error["param"] == "tokens_per_month", error
        assert this_month in error["message"]
        assert sorted(b.id for b in alpha.batches.list()) == sorted([batch.id, late.id])
        # beta has no budget: never refused on either lane.
        assert beta.chat.completions.create(**chat).usage is not None
        other = beta.files.create(file=jsonl(lines[:1]), purpose="batch")
        assert beta.batches.create(input_file_id=other.id, endpoint="/v1/chat/completions", completion_window="24h")
