"""The two roles' settings, read from the environment once at start.

Every problem is gathered and reported at once, each naming the variable, the value and what is allowed;
``__main__`` turns a :class:`ConfigError` into one line and exit status 2. The names and defaults are the
contract with the cluster side (``docs/batch.md``, rendered by ``components.batch``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

Number = TypeVar("Number", int, float)
Default = TypeVar("Default")

DEFAULT_FILES_PREFIX = "files/"
DEFAULT_RESULTS_PREFIX = "results/"
DEFAULT_COMPLETION_WINDOW_HOURS = 24
DEFAULT_REQUEST_TIMEOUT_SECONDS = 600.0
VISIBILITY_MARGIN_SECONDS = 5
"""The queue's visibility timeout must exceed the request timeout by this much: a request still running when its
message reappears would be answered twice (the second answer is dropped, but the serving time is spent twice)."""
MAX_VISIBILITY_SECONDS = 12 * 3600
"""SQS's longest visibility timeout (ChangeMessageVisibility: "The maximum is 12 hours")."""
DEFAULT_METRICS_PORT = 9090
DEFAULT_API_PORT = 8080
DEFAULT_CLIENT_ID_HEADER = "x-client-id"
DEFAULT_ENDPOINTS = ("/v1/chat/completions", "/v1/completions")
# OpenAI's own limits for a batch input file (openai batch_create_params.py: 50,000 requests, 200 MB).
DEFAULT_MAX_FILE_BYTES = 200 * 1024 * 1024
DEFAULT_MAX_REQUESTS_PER_BATCH = 50_000
DEFAULT_MAX_OUTPUT_TOKENS = 1024
DEFAULT_QUOTA_QUEUED_REQUESTS = 100_000
DEFAULT_QUOTA_QUEUED_TOKENS = 20_000_000
DEFAULT_MONITOR_INTERVAL_SECONDS = 10.0
DEFAULT_LINES_PER_MESSAGE = 10
"""Consecutive input lines per queue message: a tenth of the SQS requests (and price) of one line a message."""
DEFAULT_CONCURRENCY = 8
MAX_CONCURRENCY = 256
DEFAULT_RETRY_DELAY_SECONDS = 10
DEFAULT_SIGNALS_INTERVAL_SECONDS = 2.0
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class ConfigError(ValueError):
    """Bad environment: every problem at once."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("invalid batch settings: " + "; ".join(problems))


@dataclass(frozen=True, kw_only=True)
class Quota:
    queued_requests: int
    queued_tokens: int


@dataclass(frozen=True, kw_only=True)
class ShedRule:
    expr: str
    """PromQL (with a Prometheus URL) or a series selector ``name{label="v"}`` (with a metrics URL)."""
    above: float


@dataclass(frozen=True, kw_only=True)
class CommonConfig:
    region: str
    bucket: str
    files_prefix: str
    results_prefix: str
    queue_url: str
    dlq_url: str
    completion_window_hours: int
    request_timeout_seconds: float
    expect_visibility_timeout: int | None
    expect_max_receive_count: int | None
    metrics_address: str
    metrics_port: int
    sse_kms_key_id: str | None
    log_level: str

    @property
    def completion_window(self) -> str:
        return f"{self.completion_window_hours}h"


@dataclass(frozen=True, kw_only=True)
class ApiConfig:
    common: CommonConfig
    address: str
    port: int
    client_id_header: str
    endpoints: tuple[str, ...]
    max_file_bytes: int
    max_requests_per_batch: int
    max_output_tokens: int
    default_quota: Quota
    quotas: Mapping[str, Quota] = field(default_factory=dict)
    monitor_interval_seconds: float = DEFAULT_MONITOR_INTERVAL_SECONDS
    lines_per_message: int = DEFAULT_LINES_PER_MESSAGE

    def quota(self, client: str) -> Quota:
        return self.quotas.get(client, self.default_quota)


@dataclass(frozen=True, kw_only=True)
class WorkerConfig:
    common: CommonConfig
    serving_url: str
    api_key: str | None
    api_key_header: str
    concurrency: int
    retry_delay_seconds: int
    prometheus_url: str | None
    signals_metrics_url: str | None
    shed_rules: tuple[ShedRule, ...]
    signals_interval_seconds: float


class _Reader:
    """Reads variables from ``env``, recording every problem instead of stopping at the first."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[str] = []

    def text(self, name: str, default: str | None = None, *, required: bool = False) -> str | None:
        value = self.env.get(name, "").strip()
        if value:
            return value
        if required:
            self.problems.append(f"{name} is required (not set)")
        return default

    def number(
        self, name: str, default: Default, parse: Callable[[str], Number], low: float, high: float
    ) -> Number | Default:
        raw = self.env.get(name, "").strip()
        if not raw:
            return default
        try:
            value = parse(raw)
        except ValueError:
            value = None
        if value is None or not math.isfinite(float(value)) or not low <= float(value) <= high:
            kind = "an integer" if parse is int else "a number"
            self.problems.append(f"{name}={raw!r}: must be {kind} from {low:g} to {high:g}")
            return default
        return value

    def optional_int(self, name: str, low: int, high: int) -> int | None:
        if not self.env.get(name, "").strip():
            return None
        return self.number(name, None, int, low, high)

    def prefix(self, name: str, default: str) -> str:
        value = self.text(name, default) or default
        if not value.endswith("/") or value.startswith("/") or "//" in value:
            self.problems.append(f"{name}={value!r}: must be a key prefix ending with '/' (no leading '/')")
        return value

    def url(self, name: str, *, required: bool = False, schemes: tuple[str, ...] = ("http", "https")) -> str | None:
        value = self.text(name, required=required)
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in schemes or not parts.hostname or parts.username or parts.password:
            self.problems.append(f"{name}={value!r}: must be an {'/'.join(schemes)} URL with a host and no credentials")
        return value.rstrip("/")

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        value = (self.text(name, default) or default).upper()
        if value not in allowed:
            self.problems.append(f"{name}={value!r}: must be one of {', '.join(allowed)}")
        return value

    def done(self) -> None:
        if self.problems:
            raise ConfigError(self.problems)


def _common(read: _Reader) -> CommonConfig:
    bucket = read.text("BATCH_BUCKET", required=True) or ""
    return CommonConfig(
        region=read.text("AWS_REGION", required=True) or "",
        bucket=bucket,
        files_prefix=read.prefix("BATCH_FILES_PREFIX", DEFAULT_FILES_PREFIX),
        results_prefix=read.prefix("BATCH_RESULTS_PREFIX", DEFAULT_RESULTS_PREFIX),
        queue_url=read.url("BATCH_QUEUE_URL", required=True) or "",
        dlq_url=read.url("BATCH_DLQ_URL", required=True) or "",
        completion_window_hours=read.number(
            "BATCH_COMPLETION_WINDOW_HOURS", DEFAULT_COMPLETION_WINDOW_HOURS, int, 1, 336
        ),
        request_timeout_seconds=read.number(
            "BATCH_REQUEST_TIMEOUT_SECONDS",
            DEFAULT_REQUEST_TIMEOUT_SECONDS,
            float,
            0.1,
            MAX_VISIBILITY_SECONDS - VISIBILITY_MARGIN_SECONDS,
        ),
        expect_visibility_timeout=read.optional_int("BATCH_VISIBILITY_TIMEOUT_SECONDS", 0, MAX_VISIBILITY_SECONDS),
        expect_max_receive_count=read.optional_int("BATCH_MAX_RECEIVE_COUNT", 1, 1000),
        metrics_address=read.text("BATCH_METRICS_ADDRESS", "0.0.0.0") or "0.0.0.0",
        metrics_port=read.number("BATCH_METRICS_PORT", DEFAULT_METRICS_PORT, int, 1, 65535),
        sse_kms_key_id=read.text("BATCH_SSE_KMS_KEY_ID"),
        log_level=read.choice("BATCH_LOG_LEVEL", "INFO", LOG_LEVELS),
    )


def _quota_file(read: _Reader, default: Quota) -> dict[str, Quota]:
    name = "BATCH_QUOTAS_FILE"
    path = read.text(name)
    if path is None:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        read.problems.append(f"{name}={path!r}: cannot read it ({err.strerror})")
        return {}
    except ValueError as err:
        read.problems.append(f"{name}={path!r}: not JSON ({err})")
        return {}
    if not isinstance(data, dict):
        read.problems.append(f"{name}={path!r}: must hold an object {{client id: {{queuedTokens, queuedRequests}}}}")
        return {}
    quotas: dict[str, Quota] = {}
    for client, entry in data.items():
        if not isinstance(entry, dict) or set(entry) - {"queuedTokens", "queuedRequests"}:
            read.problems.append(f"{name}: {client!r} must map to {{queuedTokens?, queuedRequests?}} (got {entry!r})")
            continue
        values = {}
        for key, fallback in (("queuedRequests", default.queued_requests), ("queuedTokens", default.queued_tokens)):
            value = entry.get(key, fallback)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                read.problems.append(f"{name}: {client}.{key}={value!r}: must be an integer >= 0")
                value = fallback
            values[key] = value
        quotas[client] = Quota(queued_requests=values["queuedRequests"], queued_tokens=values["queuedTokens"])
    return quotas


def api_config(env: Mapping[str, str]) -> ApiConfig:
    read = _Reader(env)
    common = _common(read)
    endpoints = tuple(e.strip() for e in (read.text("BATCH_ENDPOINTS") or ",".join(DEFAULT_ENDPOINTS)).split(","))
    for endpoint in endpoints:
        if endpoint not in DEFAULT_ENDPOINTS:
            read.problems.append(
                f"BATCH_ENDPOINTS: {endpoint!r} is not served; allowed: {', '.join(DEFAULT_ENDPOINTS)}"
            )
    default_quota = Quota(
        queued_requests=read.number("BATCH_QUOTA_QUEUED_REQUESTS", DEFAULT_QUOTA_QUEUED_REQUESTS, int, 0, 10**9),
        queued_tokens=read.number("BATCH_QUOTA_QUEUED_TOKENS", DEFAULT_QUOTA_QUEUED_TOKENS, int, 0, 10**13),
    )
    config = ApiConfig(
        common=common,
        address=read.text("BATCH_API_ADDRESS", "0.0.0.0") or "0.0.0.0",
        port=read.number("BATCH_API_PORT", DEFAULT_API_PORT, int, 1, 65535),
        client_id_header=(read.text("BATCH_CLIENT_ID_HEADER", DEFAULT_CLIENT_ID_HEADER) or "").lower(),
        endpoints=endpoints,
        max_file_bytes=read.number("BATCH_MAX_FILE_BYTES", DEFAULT_MAX_FILE_BYTES, int, 1, 2 * 1024**3),
        max_requests_per_batch=read.number(
            "BATCH_MAX_REQUESTS_PER_BATCH", DEFAULT_MAX_REQUESTS_PER_BATCH, int, 1, 10**6
        ),
        max_output_tokens=read.number("BATCH_MAX_OUTPUT_TOKENS", DEFAULT_MAX_OUTPUT_TOKENS, int, 1, 10**7),
        default_quota=default_quota,
        quotas=_quota_file(read, default_quota),
        monitor_interval_seconds=read.number(
            "BATCH_MONITOR_INTERVAL_SECONDS", DEFAULT_MONITOR_INTERVAL_SECONDS, float, 0.1, 3600
        ),
        lines_per_message=read.number("BATCH_LINES_PER_MESSAGE", DEFAULT_LINES_PER_MESSAGE, int, 1, 100),
    )
    if config.port == common.metrics_port:
        read.problems.append(f"BATCH_API_PORT={config.port}: must differ from BATCH_METRICS_PORT")
    read.done()
    return config


def _shed_rules(read: _Reader) -> tuple[ShedRule, ...]:
    name = "BATCH_SHED_RULES"
    raw = read.text(name, "[]") or "[]"
    try:
        data: Any = json.loads(raw)
    except ValueError as err:
        read.problems.append(f"{name}: not JSON ({err})")
        return ()
    if not isinstance(data, list):
        read.problems.append(f'{name}: must be a JSON list of {{"expr": "...", "above": <number>}}')
        return ()
    rules = []
    for index, item in enumerate(data):
        ok = (
            isinstance(item, dict)
            and set(item) == {"expr", "above"}
            and isinstance(item["expr"], str)
            and item["expr"].strip()
            and isinstance(item["above"], int | float)
            and not isinstance(item["above"], bool)
            and math.isfinite(item["above"])
        )
        if not ok:
            read.problems.append(
                f'{name}[{index}]={item!r}: must be {{"expr": "<non-empty>", "above": <finite number>}}'
            )
            continue
        rules.append(ShedRule(expr=item["expr"].strip(), above=float(item["above"])))
    return tuple(rules)


def worker_config(env: Mapping[str, str]) -> WorkerConfig:
    read = _Reader(env)
    common = _common(read)
    key_file = read.text("BATCH_API_KEY_FILE")
    api_key = None
    if key_file is not None:
        try:
            api_key = Path(key_file).read_text(encoding="utf-8").strip()
        except OSError as err:
            read.problems.append(f"BATCH_API_KEY_FILE={key_file!r}: cannot read it ({err.strerror})")
        else:
            if not api_key or any(c.isspace() for c in api_key):
                read.problems.append(f"BATCH_API_KEY_FILE={key_file!r}: must hold one key (no whitespace inside)")
    prometheus_url = read.url("BATCH_PROMETHEUS_URL")
    metrics_url = read.url("BATCH_SIGNALS_METRICS_URL")
    if prometheus_url and metrics_url:
        read.problems.append("BATCH_PROMETHEUS_URL and BATCH_SIGNALS_METRICS_URL: set at most one")
    rules = _shed_rules(read)
    if rules and not (prometheus_url or metrics_url):
        read.problems.append(
            "BATCH_SHED_RULES: needs BATCH_PROMETHEUS_URL or BATCH_SIGNALS_METRICS_URL to read them from"
        )
    config = WorkerConfig(
        common=common,
        serving_url=read.url("BATCH_SERVING_URL", required=True) or "",
        api_key=api_key,
        api_key_header=(read.text("BATCH_API_KEY_HEADER", "authorization") or "authorization").lower(),
        concurrency=read.number("BATCH_CONCURRENCY", DEFAULT_CONCURRENCY, int, 1, MAX_CONCURRENCY),
        retry_delay_seconds=read.number(
            "BATCH_RETRY_DELAY_SECONDS", DEFAULT_RETRY_DELAY_SECONDS, int, 0, MAX_VISIBILITY_SECONDS
        ),
        prometheus_url=prometheus_url,
        signals_metrics_url=metrics_url,
        shed_rules=rules,
        signals_interval_seconds=read.number(
            "BATCH_SIGNALS_INTERVAL_SECONDS", DEFAULT_SIGNALS_INTERVAL_SECONDS, float, 0.1, 600
        ),
    )
    read.done()
    return config
