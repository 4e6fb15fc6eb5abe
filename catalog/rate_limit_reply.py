"""The edge's 429, as OpenAI's API answers it: the limit that refused named, when it resets, and OpenAI's
``x-ratelimit-*-requests`` / ``x-ratelimit-*-tokens`` headers beside the draft-03 ones (issue 30).

Why a script and metadata, not headers on the rate limiter's reply: in the cluster the edge's refusals are
rewritten by Envoy Gateway's ``responseOverride`` (an ``envoy.filters.http.custom_response`` filter, order 0,
``internal/xds/translator/custom_response.go`` v1.9.0). Its local response policy answers with a *new* local reply
(``sendLocalReply`` from ``encodeHeaders``), which Envoy sends with fresh headers (``FilterManager::
sendDirectLocalReply``): every header of the rate limiter's 429 (``x-ratelimit-limit/remaining/reset``) and any a
Lua filter added is dropped. What survives is the stream's dynamic metadata, which the override's body (a
substitution format) and its headers read. So this script, run on every route before the override sees the
reply, reads the rate limiter's headers and writes into ``NAMESPACE``:

- ``message``, ``type``, ``code``: OpenAI's error fields, the limit named (``rate_limit_exceeded``, or
  ``insufficient_quota`` for the monthly budget);
- each header of ``HEADERS`` the answer should carry: ``retry-after``, the draft-03 headers as Envoy wrote them,
  and OpenAI's ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` for the kind of limit that refused.

Which limit refused: Envoy's rate-limit filter writes ``x-ratelimit-limit`` as the limit of the descriptor with the
least remaining, then ``, <limit>;w=<window seconds>`` for every descriptor (``ratelimit_headers.cc``), and
``x-ratelimit-remaining`` / ``-reset`` of that least one. The script looks the (limit, window) pair up in the
stack's own limits (``labels``): requests per minute, tokens per minute, tokens per day, the monthly budget (its
rule runs on the ``Year`` unit, ``catalog.token_limits``). A pair two kinds share is named by both, with no
OpenAI kind header.

The monthly budget resets at the next calendar month (UTC), not at the end of the rate-limit service's Year
window: ``Retry-After`` is the earlier of the two (in December the Year window restarts the counter first).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inference_platform.catalog.token_limits import MONTH, WINDOWS, YEAR_SECONDS

NAMESPACE = "io.inference.ratelimit"
"""The dynamic-metadata namespace the script writes and the 429 override reads."""
REQUESTS, TOKENS, BUDGET = "requests", "tokens", "budget"
MINUTE_SECONDS, DAY_SECONDS = 60, 86_400
HEADERS = (
    "retry-after",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
)
"""The headers a refused client gets, each from the metadata key of its name (absent: not sent)."""
ERROR_FIELDS = ("message", "type", "code")


@dataclass(frozen=True)
class LimitKind:
    """How OpenAI names one kind of limit."""

    label: str
    """In the message: OpenAI's own words for its limits (``tokens per min (TPM)``)."""
    error_type: str
    code: str
    headers: str
    """The suffix of OpenAI's headers for it: ``requests`` or ``tokens``."""


KINDS: dict[tuple[str, int], LimitKind] = {
    (REQUESTS, MINUTE_SECONDS): LimitKind("requests per min (RPM)", "requests", "rate_limit_exceeded", "requests"),
    (TOKENS, MINUTE_SECONDS): LimitKind("tokens per min (TPM)", "tokens", "rate_limit_exceeded", "tokens"),
    (TOKENS, DAY_SECONDS): LimitKind("tokens per day (TPD)", "tokens", "rate_limit_exceeded", "tokens"),
    (BUDGET, YEAR_SECONDS): LimitKind("monthly token budget", "insufficient_quota", "insufficient_quota", "tokens"),
}
"""(kind, window seconds) -> its names. OpenAI answers a spent quota with ``insufficient_quota``."""
TOKEN_WINDOWS = {"Minute": (TOKENS, MINUTE_SECONDS), "Day": (TOKENS, DAY_SECONDS), MONTH: (BUDGET, YEAR_SECONDS)}
"""A token limit's window (``catalog.token_limits.WINDOWS``) -> (kind, the window its rule's unit reports)."""
FALLBACK = LimitKind("this API key", "requests", "rate_limit_exceeded", "")
"""A 429 whose limit the headers do not tell (no draft-03 headers, or a pair two kinds share)."""


if set(TOKEN_WINDOWS) != set(WINDOWS):
    raise ImportError("every token window needs its name in the edge's 429")


def labels(limits: Iterable[tuple[str, int, int]]) -> dict[str, list[str]]:
    """``"<limit>/<window>"`` -> the keys of ``KINDS`` (joined ``kind/window``) configured with that pair, from
    (kind, window seconds, limit) triples."""
    out: dict[str, list[str]] = {}
    for kind, window, limit in limits:
        if (kind, window) not in KINDS:
            raise ValueError(f"no name for a {kind} limit over {window} s")
        names = out.setdefault(f"{limit}/{window}", [])
        if f"{kind}/{window}" not in names:
            names.append(f"{kind}/{window}")
    return {k: sorted(v) for k, v in sorted(out.items())}


def _lua_table(mapping: dict[str, list[str]]) -> str:
    rows = []
    for key, names in mapping.items():
        quoted = ", ".join(f'"{n}"' for n in names)
        rows.append(f'["{key}"] = {{{quoted}}}')
    return "{" + ", ".join(rows) + "}"


def _kinds_table() -> str:
    rows = []
    for (kind, window), names in KINDS.items():
        fields = (names.label, names.error_type, names.code, names.headers)
        if any(c in f for f in fields for c in "\"'\\%"):
            raise ValueError(f"{names}: a name must be plain text (it goes into JSON and a format string)")
        rows.append(
            f'  ["{kind}/{window}"] = {{label = "{names.label}", type = "{names.error_type}", '
            f'code = "{names.code}", headers = "{names.headers}", budget = {str(kind == BUDGET).lower()}}},'
        )
    return "{\n" + "\n".join(rows) + "\n}"


def rate_limit_reply_lua(limits: Iterable[tuple[str, int, int]]) -> str:
    """The script (Envoy's Lua filter API: ``headers():get``, ``streamInfo():dynamicMetadata():set``; the calls
    Envoy Gateway's strict validator mocks) for a stack whose limits are ``limits`` (kind, window seconds, limit)."""
    return _LUA.format(
        namespace=NAMESPACE,
        labels=_lua_table(labels(limits)),
        kinds=_kinds_table(),
        fallback_label=FALLBACK.label,
        fallback_type=FALLBACK.error_type,
        fallback_code=FALLBACK.code,
        year=YEAR_SECONDS,
    )


_LUA = """-- The edge's 429 in OpenAI's words (catalog/rate_limit_reply.py): read the rate limiter's draft-03 headers and
-- leave what the answer should say in dynamic metadata, which the 429 override reads (its new reply drops them).
local NS = "{namespace}"
local LIMITS = {labels}
local KINDS = {kinds}

local function first_number(value)
  if value == nil then return nil end
  return tonumber(string.match(value, "^%s*(%d+)"))
end

-- Go's duration format, as OpenAI's x-ratelimit-reset-* ("6m0s", "1s").
local function duration(seconds)
  local h = math.floor(seconds / 3600)
  local m = math.floor((seconds % 3600) / 60)
  local s = seconds % 60
  if h > 0 then return string.format("%dh%dm%ds", h, m, s) end
  if m > 0 then return string.format("%dm%ds", m, s) end
  return string.format("%ds", s)
end

-- Days since 1970-01-01 of a civil date (proleptic Gregorian), so no local time zone is involved.
local function days_from_civil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function seconds_to_next_month(now)
  local t = os.date("!*t", now)
  local y, m = t.year, t.month + 1
  if m == 13 then y, m = y + 1, 1 end
  return days_from_civil(y, m, 1) * 86400 - now
end

-- The kind of the refusing limit, looked up in the stack's limits; nil when none or several match.
local function refused_kind(raw, limit)
  local windows, names, n = {{}}, {{}}, 0
  -- The windows the header gives for this limit (none from a local token bucket, which writes no quota policy).
  for l, w in string.gmatch(raw, "(%d+);w=(%d+)") do
    if tonumber(l) == limit then windows[w] = true end
  end
  for key, kinds in pairs(LIMITS) do
    local l, w = string.match(key, "^(%d+)/(%d+)$")
    if tonumber(l) == limit and (next(windows) == nil or windows[w]) then
      for _, kind in ipairs(kinds) do
        if names[kind] == nil then names[kind] = true; n = n + 1 end
      end
    end
  end
  if n ~= 1 then return nil end
  return KINDS[next(names)]
end

function envoy_on_response(handle)
  local headers = handle:headers()
  if headers:get(":status") ~= "429" then return end
  local md = handle:streamInfo():dynamicMetadata()
  local raw = headers:get("x-ratelimit-limit")
  local limit = first_number(raw)
  local remaining = first_number(headers:get("x-ratelimit-remaining"))
  local reset = first_number(headers:get("x-ratelimit-reset"))
  if raw == nil or limit == nil or remaining == nil or reset == nil then
    md:set(NS, "message", "Rate limit reached for {fallback_label}. Please retry later.")
    md:set(NS, "type", "{fallback_type}")
    md:set(NS, "code", "{fallback_code}")
    return
  end
  md:set(NS, "x-ratelimit-limit", raw)
  md:set(NS, "x-ratelimit-remaining", headers:get("x-ratelimit-remaining"))
  md:set(NS, "x-ratelimit-reset", headers:get("x-ratelimit-reset"))
  local kind = refused_kind(raw, limit)
  local wait = reset
  if kind ~= nil and kind.budget then
    wait = math.min(reset, seconds_to_next_month(os.time()))
  end
  md:set(NS, "retry-after", tostring(wait))
  if kind == nil then
    md:set(NS, "message", string.format(
      "Rate limit reached for {fallback_label}: Limit %d, Remaining %d. Please try again in %s.",
      limit, remaining, duration(wait)))
    md:set(NS, "type", "{fallback_type}")
    md:set(NS, "code", "{fallback_code}")
    return
  end
  md:set(NS, "x-ratelimit-limit-" .. kind.headers, tostring(limit))
  md:set(NS, "x-ratelimit-remaining-" .. kind.headers, tostring(remaining))
  md:set(NS, "x-ratelimit-reset-" .. kind.headers, duration(wait))
  if kind.budget then
    md:set(NS, "message", string.format(
      "You exceeded your %s: Limit %d tokens in %s (UTC), Remaining %d. It resets in %s.",
      kind.label, limit, os.date("!%Y-%m", os.time()), remaining, duration(wait)))
  else
    md:set(NS, "message", string.format(
      "Rate limit reached for %s: Limit %d, Remaining %d. Please try again in %s.",
      kind.label, limit, remaining, duration(wait)))
  end
  md:set(NS, "type", kind.type)
  md:set(NS, "code", kind.code)
end
"""
