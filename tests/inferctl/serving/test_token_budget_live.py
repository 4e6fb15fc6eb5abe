"""Issue 30, proven running: a monthly budget through the real local edge (the real CPU Triton, our OpenAI server, the
real Envoy with the metering script and the global rate-limit filter, the rate-limit service's stand-in) with the
official ``openai`` client. Enforced, a client past its budget gets 429 while a client without one passes; in shadow
mode the same spending is counted and never refused. The budget's counter is the current calendar month's, carried
in the ``x-inference-period`` header the edge sets (a client's own value is overwritten)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from inference_platform.catalog.token_limits import PERIOD_HEADER, YEAR_SECONDS
from inference_platform.components.edge.token_limits import debits
from inference_platform.inferctl.serving.edge_envoy import Upstream
from inference_platform.inferctl.serving.local_edge import LocalEdge, generate_keys, run_edge
from inference_platform.inferctl.serving.rate_limit_service import read_ledger
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.processes import free_port
from inference_platform.settings import load_settings, stack_files
from tools.local_openai_stack import openai_stack

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(600)]

TAGS = {"owner": "team", "costCenter": "cc-1"}
BUDGET = 150
LEDGER_SETTLE_S = 20.0
SERVICE_TIMEOUT_MS = 1000
"""The most edge.rateLimits.serviceTimeoutMs allows. A stream-done debit Envoy gives up on is lost (the filter
resets the call at its timeout, the documented limit of token budgets); the Python stand-in on a CI machine running
four rigs on two cores answered some after the 100 ms default, and the budget counted 220 of 330 tokens."""


def _to_month_turn(date: str) -> int:
    """Seconds from an answer's Date header to the next calendar month in UTC."""
    sent = parsedate_to_datetime(date)
    turn = datetime(sent.year + sent.month // 12, sent.month % 12 + 1, 1, tzinfo=UTC)
    return int((turn - sent).total_seconds())


def _policy(mode: str, weights: dict[str, float] | None = None) -> Any:
    edge = {
        "auth": {"clients": {"alpha": {"tier": "std"}, "beta": {"tier": "std"}}},
        "rateLimits": {"tiers": {"std": {"requestsPerMinute": 10_000}}, "serviceTimeoutMs": SERVICE_TIMEOUT_MS},
        "tokenLimits": {
            "mode": mode,
            "tokensPerMinute": None,
            "clients": {"alpha": {"tokensPerMonth": BUDGET}},
            "weights": weights or {},
        },
    }
    return load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()


@contextlib.contextmanager
def _edge(policy: Any, upstream_port: int, work: Path) -> Iterator[tuple[LocalEdge, dict[str, str]]]:
    keys = generate_keys(policy)
    with run_edge(policy, keys=keys, upstream=Upstream(address="127.0.0.1", port=upstream_port), work_dir=work,
                  address="127.0.0.1", port=free_port(), admin_port=free_port()) as edge:  # fmt: skip
        yield edge, keys


def _client(edge: LocalEdge, key: str) -> openai.OpenAI:
    http = httpx.Client(verify=str(edge.certificates.ca), timeout=60)
    return openai.OpenAI(base_url=edge.url + "/v1", api_key=key, http_client=http, max_retries=0)


def _month_debits(policy: Any, edge: LocalEdge, expected: int) -> tuple[int, set[str]]:
    """alpha's Month debits once the stream-done charges have arrived (bounded), and the periods they carried."""
    assert edge.rate_limit_ledger is not None
    deadline = time.monotonic() + LEDGER_SETTLE_S
    while True:
        ledger = read_ledger(edge.rate_limit_ledger)
        found = debits(ledger, policy).get("alpha", {}).get("Month", 0)
        if found == expected or time.monotonic() > deadline:
            periods = {v for call in ledger for d in call["descriptors"] for k, v in d["entries"] if k.endswith("-1")}
            return found, periods
        time.sleep(0.1)


def _spend(client: openai.OpenAI, model: str, until: int) -> int:
    """Requests until more than ``until`` tokens are charged; the tokens charged."""
    spent = 0
    chat = {"model": model, "messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 30}
    while spent <= until:
        answer = client.chat.completions.create(**chat, extra_headers={PERIOD_HEADER: "1999-01"})
        assert answer.usage is not None
        spent += answer.usage.total_tokens
    return spent


def test_a_monthly_budget_refuses_when_enforced_and_only_counts_in_shadow_mode(tmp_path: Path) -> None:
    this_month = datetime.now(UTC).strftime("%Y-%m")
    with openai_stack(stack_files.load("dev"), tmp_path / "stack", Timing(), edge=False) as stack:
        port = int(stack.openai_url.rsplit(":", 1)[1])
        model = stack.served_model
        chat = {"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}

        enforce = _policy("enforce")
        with _edge(enforce, port, tmp_path / "enforce") as (edge, keys):
            alpha, beta = _client(edge, keys["alpha"]), _client(edge, keys["beta"])
            spent = _spend(alpha, model, BUDGET)
            assert _month_debits(enforce, edge, spent) == (spent, {this_month})
            with pytest.raises(openai.RateLimitError) as refused:
                alpha.chat.completions.create(**chat)
            headers = refused.value.response.headers
            assert headers["x-ratelimit-limit"].startswith(f"{BUDGET}, {BUDGET};w={YEAR_SECONDS}")
            # The budget resets when the month turns (UTC), or earlier where the service's Year window restarts
            # its counter (catalog.token_limits.year_window_restart): Retry-After is the earlier, not the Year's end.
            # The script read its clock within a second of the Date header's (Envoy caches its Date).
            turn = _to_month_turn(headers["date"])
            year_reset = int(headers["x-ratelimit-reset"].split(",")[0])
            assert int(headers["retry-after"]) in {min(year_reset, turn + d) for d in (-1, 0, 1)}
            assert headers["x-ratelimit-limit-tokens"] == str(BUDGET) and headers["x-ratelimit-remaining-tokens"] == "0"
            error = refused.value.response.json()["error"]
            assert error["code"] == error["type"] == "insufficient_quota"
            assert error["message"].startswith(f"You exceeded your monthly token budget: Limit {BUDGET} tokens in "
                                               f"{this_month} (UTC)")  # fmt: skip
            assert beta.chat.completions.create(**chat).usage is not None  # no budget, not refused

        shadow = _policy("shadow")
        with _edge(shadow, port, tmp_path / "shadow") as (edge, keys):
            alpha = _client(edge, keys["alpha"])
            spent = _spend(alpha, model, 2 * BUDGET)  # twice the budget, never refused
            assert _month_debits(shadow, edge, spent) == (spent, {this_month})
            assert alpha.chat.completions.create(**chat).usage is not None

        # Weighted (edge.tokenLimits.weights): the metering script charges 3 per input and 0.25 per output token,
        # rounded up, a streamed answer (the running count of the usage comments) as a unary one.
        weighted = _policy("enforce", {"input": 3, "output": 0.25, "cached": 0.5})
        with _edge(weighted, port, tmp_path / "weighted") as (edge, keys):
            alpha = _client(edge, keys["alpha"])
            unary = alpha.chat.completions.create(**{**chat, "max_tokens": 7})
            stream = alpha.chat.completions.create(
                **{**chat, "max_tokens": 7}, stream=True, stream_options={"include_usage": True}
            )
            usages = [unary.usage, *(c.usage for c in stream if c.usage is not None)]
            expected = 0
            for usage in usages:
                assert usage is not None
                details = usage.prompt_tokens_details
                cached = (details.cached_tokens or 0) if details is not None else 0
                expected += weighted.tokens.weights.charge(usage.prompt_tokens, usage.completion_tokens, cached)
            assert len(usages) == 2 and expected != sum(u.total_tokens for u in usages if u is not None)
            assert _month_debits(weighted, edge, expected) == (expected, {this_month})
