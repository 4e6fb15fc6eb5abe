"""One monthly budget across both lanes (issue 30): the batch lane checks and debits the same counters the edge
charges, at the rate-limit service the edge calls (``BATCH_BUDGETS``, rendered from the stack's edge policy by
``components.edge.token_limits.batch_budgets``).

The call is the edge's own: ``envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`` to the edge's domain,
with the descriptor Envoy's rate-limit filter sends for the client's budget rule in the current billing period
(``YYYY-MM`` in UTC, as the metering script's ``os.date("!%Y-%m")``) and a per-descriptor ``hits_addend``:

- ``check``: ``hits_addend`` 0, "check only" (``envoyproxy/ratelimit`` ``src/utils/utilities.go``
  ``GetHitsAddends``: a set per-descriptor value is used, zero included), before a submission is queued: a client
  whose budget is spent (the counter above its limit, ``base_limiter.go``) gets 429; and again by the worker before
  each message's lines are sent (``worker.BUDGET_CACHE_SECONDS``): a batch admitted before its client's budget was
  spent files its remaining lines as ``insufficient_quota`` (``spent_error``) instead of running past the budget;
- ``debit``: ``hits_addend`` = the answered line's weighted tokens times the batch weight, rounded up
  (``batch_charge``, the formula of ``catalog.token_limits.TokenWeights.batch_charge``, which the image does not
  hold: a test holds the two equal), once per written line (``worker._write``).

Like the edge, the lane fails open: an unreachable service admits the submission (Envoy Gateway's filter sets
``failure_mode_deny`` only with ``failClosed``). A debit waits for an unreachable service instead (``DEBIT_WAIT_
SECONDS``, gRPC's wait for ready: the call is queued until the channel is connected and sent then, once), so a
service that restarts loses no debit; one that still fails, or that reached the service and failed there, is logged
and counted, never resent (a resent call could charge twice); ``batch_budget_calls_total{call, outcome}`` says how
often.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import Counter

from inference_platform.batch.rate_limit_protocol import METHOD, OVER_LIMIT, SERVICE, messages

from .config import Budgets

log = logging.getLogger(__name__)

CALL_TIMEOUT_SECONDS = 2.0
"""A check's deadline: a submission (or a message's lines) waits no longer for an answer before it is admitted."""
DEBIT_WAIT_SECONDS = 30.0
"""A debit's deadline, with ``wait_for_ready``: gRPC queues a call while its channel is in TRANSIENT_FAILURE instead of
failing it at once, until the channel is READY or the deadline passes (grpc/grpc doc/wait-for-ready.md); a call is
sent only over a ready channel, so a debit that waited was not sent twice. Long enough for the service's pod to be
replaced; the line's message is deleted only after its debit returns (``worker._write``)."""
CALLS = Counter(
    "batch_budget_calls",
    "The batch lane's calls to the rate-limit service for the shared monthly budgets",
    ["call", "outcome"],
)


SCALE = 1000
"""Weights are thousandths of a token (``BATCH_BUDGETS.weights``)."""


def batch_charge(weights: Mapping[str, int], prompt: int, completion: int, cached: int) -> int:
    """A batch line's charge: (input x uncached + cached x cached + output x completion) x batch, in thousandths,
    rounded up to a whole token; cached tokens are part of the prompt."""
    cached = min(max(cached, 0), prompt)
    milli = weights["input"] * (prompt - cached) + weights["cached"] * cached + weights["output"] * completion
    return -(-milli * weights["batch"] // (SCALE * SCALE))


def spent_error() -> tuple[str, str]:
    """The error-file code and message of a line refused because its client's budget is spent (OpenAI's own code for
    a spent quota)."""
    return (
        "insufficient_quota",
        f"This request was not executed: the client's monthly token budget for {period()} is spent.",
    )


def period(now: float | None = None) -> str:
    """The billing period: the calendar month in UTC, as the edge's metering script writes it."""
    return time.strftime("%Y-%m", time.gmtime(time.time() if now is None else now))


class BudgetClient:
    """Checks and debits the budgets of ``budgets.clients`` at ``budgets.address``."""

    def __init__(self, budgets: Budgets) -> None:
        import grpc  # type: ignore[import-untyped]  # grpcio ships no types; the stub package is not in the locks

        self.budgets = budgets
        self.request_type, response_type = messages()
        self.channel = grpc.insecure_channel(budgets.address)
        self.call = self.channel.unary_unary(
            f"/{SERVICE}/{METHOD}",
            request_serializer=self.request_type.SerializeToString,
            response_deserializer=response_type.FromString,
        )

    def close(self) -> None:
        self.channel.close()

    def budgeted(self, client: str) -> bool:
        return client in self.budgets.clients

    def _request(self, client: str, hits: int) -> Any:
        request = self.request_type(domain=self.budgets.domain)
        descriptor = request.descriptors.add()
        month = period()
        for key, value in self.budgets.clients[client]:
            descriptor.entries.add(key=key, value=month if value is None else value)
        descriptor.hits_addend.value = hits
        return request

    def check(self, client: str) -> bool:
        """Whether ``client`` may submit: False only when the service says its budget is spent."""
        if not self.budgeted(client):
            return True
        try:
            answer = self.call(self._request(client, 0), timeout=CALL_TIMEOUT_SECONDS)
        except Exception as err:
            CALLS.labels(call="check", outcome="error").inc()
            log.warning("budget check for %s failed (%s): admitted", client, err)
            return True
        over = answer.overall_code == OVER_LIMIT
        CALLS.labels(call="check", outcome="over" if over else "ok").inc()
        return not over

    def debit(self, client: str, counts: dict[str, int]) -> int | None:
        """Debit a written line's usage (``batch.usage`` counts) to ``client``'s budget; the tokens debited, or
        None when it has no budget or the call failed."""
        if not self.budgeted(client):
            return None
        hits = batch_charge(self.budgets.weights, counts["prompt"], counts["completion"], counts["cached"])
        try:
            self.call(self._request(client, hits), timeout=DEBIT_WAIT_SECONDS, wait_for_ready=True)
        except Exception as err:
            CALLS.labels(call="debit", outcome="error").inc()
            log.warning("budget debit of %d tokens for %s failed (%s): not resent", hits, client, err)
            return None
        CALLS.labels(call="debit", outcome="ok").inc()
        return hits
