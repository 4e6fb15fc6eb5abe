"""Batch work yields to interactive traffic: the worker reads the servers' queue and KV-cache signals and
stops taking work while any is above its threshold.

Two sources of the same rules: Prometheus instant queries (``/api/v1/query``, the cluster's
kube-prometheus-stack; the value of a rule is the largest sample of the returned vector or the scalar),
or one Prometheus-text ``/metrics`` page read directly (the local rig; a rule is a series selector
``name{label="value"}`` summed over the matching series). Above any threshold the allowed concurrency
drops to zero at once; below all of them it climbs back by one per interval, so a burst of batch work does
not return all at once. A signal that cannot be read counts as above: the interactive tier is the one
that must keep its SLO.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from . import metrics
from .config import ShedRule, WorkerConfig

log = logging.getLogger(__name__)

SELECTOR = re.compile(r"^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s*$")
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
READ_TIMEOUT_SECONDS = 5.0


def parse_selector(expr: str) -> tuple[str, dict[str, str]]:
    """``name{a="x",b="y"}`` -> (name, labels); ValueError otherwise (only exact-match labels)."""
    match = SELECTOR.match(expr)
    if not match:
        raise ValueError(f'{expr!r} is not a series selector name{{label="value",...}}')
    name, body = match.group(1), match.group(2) or ""
    labels: dict[str, str] = {}
    position = 0
    while position < len(body.strip()):
        item = MATCHER.match(body, position)
        if not item:
            raise ValueError(f'{expr!r}: labels must be label="value" pairs')
        labels[item.group(1)] = item.group(2)
        position = item.end()
    return name, labels


def value_from_text(text: str, expr: str) -> float:
    name, labels = parse_selector(expr)
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += float(sample.value)
    return total


def value_from_prometheus(payload: dict[str, Any]) -> float:
    """The largest sample of an instant query's answer (0 for an empty vector: nothing is waiting)."""
    if payload.get("status") != "success":
        raise ValueError(f"Prometheus answered {payload.get('status')}: {payload.get('error')}")
    data = payload["data"]
    if data["resultType"] == "scalar":
        return float(data["result"][1])
    if data["resultType"] != "vector":
        raise ValueError(f"a shed rule must return a vector or a scalar, not a {data['resultType']}")
    return max((float(item["value"][1]) for item in data["result"]), default=0.0)


class Shedder:
    """The allowed concurrency, updated from the signals every interval."""

    def __init__(self, config: WorkerConfig) -> None:
        self.maximum = config.concurrency
        self.rules: Sequence[ShedRule] = config.shed_rules
        self.prometheus_url = config.prometheus_url
        self.metrics_url = config.signals_metrics_url
        self.interval = config.signals_interval_seconds
        # With rules, start shed and climb once the first reading is in: a fresh worker must not open at full
        # concurrency into a busy server.
        self.limit = 0 if config.shed_rules else self.maximum
        self.shedding = bool(config.shed_rules)
        self.last_values: dict[str, float] = {}
        metrics.CONCURRENCY_LIMIT.set(self.limit)
        metrics.SHEDDING.set(1 if self.shedding else 0)
        if self.rules:
            for rule in self.rules:
                if self.metrics_url:
                    parse_selector(rule.expr)  # refuse a bad selector at start, not at the first read
        else:
            log.warning("no BATCH_SHED_RULES: batch work will not yield to interactive traffic")

    async def read(self, session: aiohttp.ClientSession) -> bool:
        """Whether any rule is above its threshold now (True when a signal cannot be read)."""
        timeout = aiohttp.ClientTimeout(total=READ_TIMEOUT_SECONDS)
        try:
            values = {}
            if self.metrics_url:
                async with session.get(self.metrics_url, timeout=timeout) as response:
                    response.raise_for_status()
                    text = await response.text()
                for rule in self.rules:
                    values[rule.expr] = value_from_text(text, rule.expr)
            else:
                for rule in self.rules:
                    url = f"{self.prometheus_url}/api/v1/query"
                    async with session.get(url, params={"query": rule.expr}, timeout=timeout) as response:
                        values[rule.expr] = value_from_prometheus(await response.json(content_type=None))
        except Exception as err:  # any failure to read is a reason to yield
            metrics.WORKER_ERRORS.labels(reason="signals").inc()
            log.warning("reading the shed signals failed (%s): shedding", err)
            return True
        self.last_values = values
        return any(values[rule.expr] > rule.above for rule in self.rules)

    def apply(self, above: bool) -> None:
        if above:
            self.limit = 0
        else:
            self.limit = min(self.maximum, self.limit + 1)
        if above != self.shedding:
            log.info("shedding %s (signals %s)", "on" if above else "off", self.last_values)
        self.shedding = above
        metrics.SHEDDING.set(1 if above else 0)
        metrics.CONCURRENCY_LIMIT.set(self.limit)

    async def run(self, session: aiohttp.ClientSession, stopping: Any) -> None:
        """Until ``stopping`` (an asyncio.Event) is set."""
        if not self.rules:
            return
        while not stopping.is_set():
            started = time.monotonic()
            self.apply(await self.read(session))
            if self.shedding:
                metrics.BACKOFF_SECONDS.inc(self.interval)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), max(0.0, self.interval - (time.monotonic() - started)))
