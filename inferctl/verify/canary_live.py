"""The canary gate's second witness: real traffic, as the rollouts' own servers counted it, read from Prometheus.

Each version's OpenAI server publishes its request histograms and counters under vLLM's names
(catalog/server_metrics.py), labelled ``model_name``; its ServiceMonitor adds ``namespace`` and ``job`` (the
Service's name: ``triton`` or ``triton-<key>``, settings/models.py ``ModelRollout.service_name``). The canary and
its current version serve one model name, so ``job`` tells them apart. Over the last ``window`` seconds, per
version:

- requests the server judged: ``http_requests_total`` on the generation paths, any status but ``4xx`` (a client's
  own mistake says nothing about the version);
- errors: ``5xx`` answers plus engine failures (``vllm:request_success_total{finished_reason="error"}``; a failure
  inside a streamed 200 is counted only there). A non-streamed request the engine failed is both a 500 and an
  engine error, so it counts twice: the ratio errs towards rollback, never towards promotion;
- time to first token p95 and inter-token latency p50/p95 from the histograms (``histogram_quantile`` over the
  window's increase of ``_bucket``).

An unreachable or refusing Prometheus is "not measured" with the reason; the gate then decides what that means
(canary_gate.py ``decide``).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from inference_platform.catalog import server_metrics as m
from inference_platform.catalog.serving_contract import OPENAI_CHAT_PATH, OPENAI_COMPLETIONS_PATH

TIMEOUT_S = 10.0
GENERATION_HANDLERS = f"{OPENAI_CHAT_PATH}|{OPENAI_COMPLETIONS_PATH}"


@dataclass(frozen=True)
class VersionScope:
    """One version's series: its namespace, Service (``job``) and public model name."""

    namespace: str
    job: str
    model: str


@dataclass(frozen=True)
class LiveVersion:
    """One version's real traffic over the window."""

    requests: float
    """Requests the server judged (2xx and 5xx); Prometheus's ``increase`` extrapolates, so not whole."""
    errors: float
    ttft_p95_ms: float | None
    """None without a first token in the window."""
    itl_p50_ms: float | None
    itl_p95_ms: float | None

    @property
    def error_rate(self) -> float:
        return min(1.0, self.errors / self.requests) if self.requests > 0 else 0.0

    def as_output(self) -> dict[str, object]:
        return {
            "requests": round(self.requests, 1),
            "errors": round(self.errors, 1),
            "ttft_p95_ms": _rounded(self.ttft_p95_ms),
            "itl_p50_ms": _rounded(self.itl_p50_ms),
            "itl_p95_ms": _rounded(self.itl_p95_ms),
        }


@dataclass(frozen=True)
class Live:
    """Both versions' live figures, or why they are missing (``note``)."""

    window_s: int
    canary: LiveVersion | None = None
    current: LiveVersion | None = None
    note: str = ""
    queries: dict[str, str] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return self.canary is not None and self.current is not None

    def as_output(self) -> dict[str, object]:
        return {
            "window_s": self.window_s,
            "canary": self.canary.as_output() if self.canary else None,
            "current": self.current.as_output() if self.current else None,
            "note": self.note,
        }


class PrometheusUnavailable(Exception):
    pass


def queries(scope: VersionScope, window_s: int) -> dict[str, str]:
    """The PromQL of one version's figures, by name."""
    series = _selector({"namespace": scope.namespace, "job": scope.job, m.MODEL_LABEL: scope.model})
    http = f"{m.HTTP_REQUESTS}{m.COUNTER_SUFFIX}"
    judged = _selector({"namespace": scope.namespace, "job": scope.job}, handler=GENERATION_HANDLERS, status="!4xx")
    failed = _selector({"namespace": scope.namespace, "job": scope.job}, handler=GENERATION_HANDLERS, status="5xx")
    engine = series[:-1] + ',finished_reason="error"}'
    window = f"[{window_s}s]"

    def quantile(level: float, histogram: str) -> str:
        return f"histogram_quantile({level:g}, sum by (le) (increase({histogram}_bucket{series}{window})))"

    return {
        "requests": f"sum(increase({http}{judged}{window}))",
        "http_errors": f"sum(increase({http}{failed}{window}))",
        "engine_errors": f"sum(increase({m.REQUEST_SUCCESS}{m.COUNTER_SUFFIX}{engine}{window}))",
        "ttft_p95": quantile(0.95, m.TTFT_SECONDS),
        "itl_p50": quantile(0.5, m.INTER_TOKEN_SECONDS),
        "itl_p95": quantile(0.95, m.INTER_TOKEN_SECONDS),
    }


def measure_live(base_url: str, canary: VersionScope, current: VersionScope, window_s: int, *, at: float) -> Live:
    """Both versions over the ``window_s`` seconds before ``at`` (epoch seconds)."""
    shown = {f"canary {k}": q for k, q in queries(canary, window_s).items()}
    shown |= {f"current {k}": q for k, q in queries(current, window_s).items()}
    try:
        return Live(
            window_s,
            canary=_version(base_url, canary, window_s, at),
            current=_version(base_url, current, window_s, at),
            queries=shown,
        )
    except PrometheusUnavailable as err:
        return Live(window_s, note=str(err), queries=shown)


def _version(base_url: str, scope: VersionScope, window_s: int, at: float) -> LiveVersion:
    values = {name: _scalar(base_url, q, at) for name, q in queries(scope, window_s).items()}

    def ms(name: str) -> float | None:
        value = values[name]
        return None if value is None else value * 1000

    return LiveVersion(
        requests=values["requests"] or 0.0,
        errors=(values["http_errors"] or 0.0) + (values["engine_errors"] or 0.0),
        ttft_p95_ms=ms("ttft_p95"),
        itl_p50_ms=ms("itl_p50"),
        itl_p95_ms=ms("itl_p95"),
    )


def _scalar(base_url: str, query: str, at: float) -> float | None:
    """The one value of an instant query; None for an empty vector or NaN (no sample in the window)."""
    url = base_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": query, "time": f"{at:.3f}"})
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            payload: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as err:
        body = err.read()
        try:
            payload = json.loads(body)
        except json.JSONDecodeError:
            raise PrometheusUnavailable(f"Prometheus at {base_url} answered {err.code}") from None
    except (urllib.error.URLError, OSError, json.JSONDecodeError) as err:
        raise PrometheusUnavailable(f"Prometheus not reachable at {base_url}: {err}") from None
    if payload.get("status") != "success":
        raise PrometheusUnavailable(f"Prometheus refused {query!r}: {payload.get('error', payload)}")
    result = payload.get("data", {}).get("result", [])
    if not result:
        return None
    value = float(result[0]["value"][1])
    return None if math.isnan(value) or math.isinf(value) else value


def _selector(labels: dict[str, str], **matchers: str) -> str:
    parts = [f"{k}={_quote(v)}" for k, v in labels.items()]
    for name, value in matchers.items():
        if value.startswith("!"):
            parts.append(f"{name}!={_quote(value[1:])}")
        elif "|" in value:
            parts.append(f"{name}=~{_quote(value)}")
        else:
            parts.append(f"{name}={_quote(value)}")
    return "{" + ",".join(parts) + "}"


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
