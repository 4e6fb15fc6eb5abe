"""Showback (issue 30): each client's tokens for a calendar month (UTC), per model and lane, with their cost and the
share of the client's monthly budget, read from the Prometheus series the stack publishes.

- Interactive lane: the OpenAI server's counters by ``client`` (the edge's client id) and ``model_name``:
  ``vllm:prompt_tokens_total``, ``vllm:generation_tokens_total`` and ``vllm:prefix_cache_hits_total`` (the cached
  part of the prompt tokens). Requests that reached a replica without the edge carry ``client="none"`` (the batch
  lane's workers) or ``invalid``/``other``: they are not a client's and are left out here.
- Batch lane: the workers' ``batch_tokens_total{client, model_name, kind}``, the exact usage of each answered line,
  by the client that submitted the batch (``batch/usage.py``).

Month to date, exactly, per series, at the query time (the month's end for a past month), ``W`` the seconds since
the month began: ``max_over_time(c[W])`` less the count at the month's start, which is the series' first value in
the window when it existed before the month (its ``_created`` sample, prometheus_client's creation time, is older)
and 0 when it was born during the month (a new pod, a client's first request). ``increase`` is not used where it
need not be: it extrapolates to the window's edges, so a count of tokens would come out fractional and off by up to
a scrape interval's worth. A series whose counter reset within the window (a restarted container in the same pod)
takes ``increase(c[W])``. Cost: tokens x the price per million
tokens of the lane (the stack's capacity plan: ``usdPerMillionTotalTokens`` for the interactive lane, the backfill's
``usdPerMillionBatchTokens`` for the batch lane; flags override). Budget used: the client's prompt + completion
tokens of both lanes over its ``edge.tokenLimits`` ``tokensPerMonth``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from inference_platform.catalog.server_metrics import (
    CLIENT_LABEL,
    COUNTER_SUFFIX,
    GENERATION_TOKENS,
    MODEL_LABEL,
    PREFIX_CACHE_HITS,
    PROMPT_TOKENS,
)

BATCH_TOKENS = "batch_tokens_total"
"""The batch workers' counter (``batch/usage.py``), by ``client``, ``model_name`` and ``kind``."""
KINDS = ("prompt", "completion", "cached")
NOT_A_CLIENT = "none|invalid|other"
"""The server's client labels that name no edge client (``inference_image/openai_api/metrics.py``)."""
LANES = ("interactive", "batch")
Query = Callable[[str, float], list[dict[str, Any]]]
"""(PromQL, evaluation time) -> the instant vector's samples (Prometheus' ``/api/v1/query`` ``data.result``)."""


class PrometheusUnavailable(RuntimeError):
    pass


@dataclass(frozen=True)
class Month:
    year: int
    month: int

    @classmethod
    def parse(cls, text: str) -> Month:
        """``YYYY-MM``; ValueError otherwise."""
        parsed = datetime.strptime(text, "%Y-%m")
        return cls(parsed.year, parsed.month)

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        return datetime(self.year + self.month // 12, self.month % 12 + 1, 1, tzinfo=UTC)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"


@dataclass
class Row:
    client: str
    model: str
    lane: str
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    usd: float | None = None

    @property
    def charged(self) -> int:
        """What a budget counts: prompt + completion tokens (cached tokens are part of the prompt's)."""
        return self.tokens["prompt"] + self.tokens["completion"]


@dataclass(frozen=True)
class Report:
    month: Month
    at: datetime
    rows: list[Row]
    budgets: Mapping[str, int]
    prices: Mapping[str, float | None]

    def budget_used(self, client: str) -> float | None:
        budget = self.budgets.get(client)
        if not budget:
            return None
        return sum(r.charged for r in self.rows if r.client == client) / budget

    def to_json(self) -> dict[str, Any]:
        return {
            "month": str(self.month),
            "at": self.at.isoformat(),
            "usdPerMillionTokens": dict(self.prices),
            "rows": [
                {"client": r.client, "model": r.model, "lane": r.lane, **r.tokens, "usd": r.usd} for r in self.rows
            ],
            "budgets": {c: {"tokensPerMonth": b, "used": self.budget_used(c)} for c, b in sorted(self.budgets.items())},
        }


def prometheus_query(base_url: str, timeout: float = 30.0) -> Query:
    """A ``Query`` against a Prometheus HTTP API."""

    def query(expr: str, at: float) -> list[dict[str, Any]]:
        url = f"{base_url.rstrip('/')}/api/v1/query?{urllib.parse.urlencode({'query': expr, 'time': f'{at:.3f}'})}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as err:
            try:
                body = json.loads(err.read() or b"{}")
            except ValueError:
                raise PrometheusUnavailable(f"{base_url}: HTTP {err.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as err:
            raise PrometheusUnavailable(f"{base_url}: {err}") from None
        if body.get("status") != "success":
            raise PrometheusUnavailable(f"{expr}: {body.get('errorType')}: {body.get('error')}")
        return list(body["data"]["result"])

    return query


def month_to_date(counter: str, matchers: str, window_s: int, start: float) -> str:
    """The exact count of ``counter`` (a ``..._total`` name) since ``start`` (= now - ``window_s``), per series."""
    total = f"{counter}{{{matchers}}}"
    created = f"{counter.removesuffix(COUNTER_SUFFIX)}_created{{{matchers}}}"
    w = f"[{window_s}s]"
    latest = f"max_over_time({total}{w})"
    # The count at the month's start: the first value when the series is older than the month, else 0.
    before = f"(min_over_time({total}{w}) and (max_over_time({created}{w}) < {start:.3f}) or {latest} * 0)"
    return f"(({latest} - {before}) and (resets({total}{w}) == 0) or increase({total}{w}))"


def queries(window_s: int, start: float) -> dict[tuple[str, str], str]:
    """(lane, kind) -> the PromQL of that month-to-date count by client and model."""
    not_client = f'{CLIENT_LABEL}!~"{NOT_A_CLIENT}"'
    by = f"sum by ({CLIENT_LABEL}, {MODEL_LABEL})"
    server = {"prompt": PROMPT_TOKENS, "completion": GENERATION_TOKENS, "cached": PREFIX_CACHE_HITS}
    out = {
        ("interactive", kind): f"{by} {month_to_date(name + COUNTER_SUFFIX, not_client, window_s, start)}"
        for kind, name in server.items()
    }
    for kind in KINDS:
        matcher = f'kind="{kind}"'
        out[("batch", kind)] = f"{by} {month_to_date(BATCH_TOKENS, matcher, window_s, start)}"
    return out


def report(
    query: Query,
    month: Month,
    *,
    now: datetime,
    prices: Mapping[str, float | None],
    budgets: Mapping[str, int],
) -> Report:
    """The month's table as of ``now`` (its end for a past month)."""
    if now <= month.start:
        raise ValueError(f"{month} has not begun (now {now:%Y-%m-%d %H:%M} UTC)")
    at = min(now, month.end)
    window = max(1, int((at - month.start).total_seconds()))
    rows: dict[tuple[str, str, str], Row] = {}
    for (lane, kind), expr in queries(window, at.timestamp() - window).items():
        for sample in query(expr, at.timestamp()):
            labels = sample["metric"]
            key = (labels.get(CLIENT_LABEL, ""), labels.get(MODEL_LABEL, ""), lane)
            row = rows.setdefault(key, Row(*key))
            # Whole but for a series that reset (increase() extrapolates): a count of tokens is whole.
            row.tokens[kind] += round(float(sample["value"][1]))
    out = sorted((r for r in rows.values() if any(r.tokens.values())), key=lambda r: (r.client, r.model, r.lane))
    for row in out:
        price = prices.get(row.lane)
        row.usd = None if price is None else row.charged * price / 1e6
    return Report(month=month, at=at, rows=out, budgets=budgets, prices=prices)


def text(rep: Report) -> str:
    head = ("client", "model", "lane", "prompt", "completion", "cached", "usd", "budget used")
    lines = [head]
    for r in rep.rows:
        used = rep.budget_used(r.client)
        lines.append(
            (
                r.client, r.model, r.lane, f"{r.tokens['prompt']:,}", f"{r.tokens['completion']:,}",
                f"{r.tokens['cached']:,}", "-" if r.usd is None else f"{r.usd:,.2f}",
                "-" if used is None else f"{used:.1%}",
            )
        )  # fmt: skip
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    body = ["  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
            for row in lines]  # fmt: skip
    priced = ", ".join(f"{lane} {'unpriced' if p is None else f'${p:g}/M'}" for lane, p in rep.prices.items())
    title = f"Token usage {rep.month} (UTC), month to date at {rep.at:%Y-%m-%d %H:%M} UTC; {priced}"
    if not rep.rows:
        body.append("(no tokens this month)")
    return "\n".join([title, *body])
