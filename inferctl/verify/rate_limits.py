"""Are the gateway's per-client rate limits in force? One request through the edge, judged by its headers.

Envoy Gateway v1.9.0 configures the proxies' global rate-limit filter with ``X-RateLimit-*`` response
headers (draft 03: ``internal/xds/translator/ratelimit.go``, unless a ClientTrafficPolicy sets
``headers.disableRateLimitHeaders``, which ours does not); Envoy fills them from the limits the rate-limit
service returns. When that service does not answer, Envoy adds none and, failing open (Envoy Gateway's
default), lets the request through unlimited; failing closed, it answers 500. Either way the answer
carries no ``X-RateLimit-Limit``: that is the check, and it needs neither Prometheus nor cluster access.
A 429 means the limit is being enforced. The local edge's Envoy sets the same headers
(``local_ratelimit`` with draft-03 headers), so the check reads the same there.

tests/inferctl/verify/test_rate_limits.py proves both outcomes on the real Envoy binary in front of a
stand-in rate-limit service, present, refusing and absent.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inference_platform.catalog.serving_contract import OPENAI_HEALTH_PATH
from inference_platform.loadgen.connection_errors import describe

PROBE_PATH = OPENAI_HEALTH_PATH
LIMIT_HEADER = "x-ratelimit-limit"
REMAINING_HEADER = "x-ratelimit-remaining"
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RateLimitProbe:
    ok: bool
    status: int | None
    limit: str | None
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "status": self.status, "limit": self.limit, "note": self.note}


def probe(
    base_url: str, headers: Mapping[str, str], *, ca_file: str | None = None, timeout: float = TIMEOUT_S
) -> RateLimitProbe:
    """GET ``<base_url>/health`` (the public health endpoint) as a client (its API-key header in ``headers``) and
    judge the rate-limit headers of the answer."""
    request = urllib.request.Request(base_url.rstrip("/") + PROBE_PATH, headers=dict(headers), method="GET")
    context = ssl.create_default_context(cafile=ca_file) if base_url.startswith("https://") else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return judge(response.status, response.headers)
    except urllib.error.HTTPError as err:
        return judge(err.code, err.headers)
    except (urllib.error.URLError, OSError) as err:
        return RateLimitProbe(False, None, None, f"no answer: {describe(base_url, err, ca_file)}")


def judge(status: int, headers: Any) -> RateLimitProbe:
    limit = headers.get(LIMIT_HEADER) if headers is not None else None
    if status == 429:
        return RateLimitProbe(True, status, limit, "429: this client is over its limit, so limits are enforced")
    if limit:
        remaining = headers.get(REMAINING_HEADER)
        return RateLimitProbe(True, status, limit, f"limit {limit}, remaining {remaining} (HTTP {status})")
    if status in (401, 403):
        return RateLimitProbe(False, status, None, f"HTTP {status}: the key was refused, so no limit was checked")
    if status == 500:
        return RateLimitProbe(
            False,
            status,
            None,
            "HTTP 500 with no X-RateLimit headers: the rate-limit service does not answer and the gateway "
            "fails closed (edge.rateLimits.failClosed), or the gateway is broken otherwise",
        )
    return RateLimitProbe(
        False,
        status,
        None,
        f"HTTP {status} with no X-RateLimit headers: the gateway's rate-limit service did not answer, so "
        "per-client limits are not enforced (it fails open)",
    )
