"""Exact token metering at the edge (issue 30): the Lua script both renderings run on the OpenAI routes, and the
dynamic metadata it writes for the rate-limit filter's stream-done charge.

How a request is charged, in order:

1. On the request the script sets ``serving_contract.USAGE_METER_HEADER`` (overwriting whatever the client sent):
   the OpenAI server then reports a stream's running usage in SSE comment lines. It also sets
   ``catalog.token_limits.PERIOD_HEADER`` to the billing period (``YYYY-MM``, UTC) the monthly budget counts by. The edge asks by header, not by
   rewriting ``stream_options.include_usage`` into the body (Envoy AI Gateway's way): Envoy Gateway v1.9.0 runs
   every Lua filter before api_key_auth and the request buffer (the serving contract's note says why that matters).
2. On the answer it follows the body as it passes (``bodyChunks()``: nothing is buffered, a stream stays a stream)
   and writes the usage into dynamic metadata (``METADATA_NAMESPACE``) each time it learns a newer value:
   - a JSON answer: the last complete ``"usage": {...}`` object of the body;
   - a stream: each ``: usage`` comment line (the running count, so an aborted stream or one failing after its
     first token is charged what was generated up to then) and each ``data:`` event's ``usage`` (a standard
     server's final chunk). Usage is cumulative: the latest value replaces the earlier one, it is never summed.
   The comment lines are removed from what the client receives, so a client that did not ask for
   ``include_usage`` sees no usage, and one that asked sees exactly OpenAI's final usage chunk.
3. When the stream ends, completed, failed or reset by the client, Envoy's rate-limit filter sends the rules'
   ``apply_on_stream_done`` descriptors with ``hits_addend`` = ``%DYNAMIC_METADATA(<namespace>:tokens)%``
   (``components.edge.token_limits``). A request that never reached a replica (401, 413, 429) or whose answer
   carries no usage (``GET /v1/models``, a 4xx of the server) has no metadata: Envoy drops that descriptor, the
   request costs 0.

What is charged (``CHARGED_KEY``) is the weighted count of OpenAI's usage, rounded up
(``catalog.token_limits.TokenWeights.charge``, ``edge.tokenLimits.weights``): the input tokens not read from the
prefix cache, the cached ones (``prompt_tokens_details.cached_tokens``, part of the prompt tokens) and the
completion tokens, each at its weight in thousandths; with every weight 1, ``prompt_tokens + completion_tokens``.
The parts are written beside it for the access log and showback.

The parsing is string matching, not a JSON decoder (Envoy's LuaJIT ships none): a ``"usage"`` key followed by a
colon can only be a key of the answer's own JSON, never model text, because inside a JSON string every quote is
escaped. A 429's words and headers are ``catalog.rate_limit_reply``'s, on every route.
"""

from __future__ import annotations

from inference_platform.catalog.serving_contract import (
    USAGE_COMMENT_PREFIX,
    USAGE_METER_HEADER,
    USAGE_METER_RUNNING,
)
from inference_platform.catalog.token_limits import METERING_NAMESPACE, PERIOD_HEADER, WEIGHT_SCALE, TokenWeights

METADATA_NAMESPACE = METERING_NAMESPACE
"""The dynamic-metadata namespace the script writes (Envoy Gateway's ``cost.response.metadata.namespace``)."""
CHARGED_KEY = "tokens"
"""What the token rules charge: the latest usage's weighted tokens (prompt + completion with every weight 1)."""
PART_KEYS = ("prompt_tokens", "completion_tokens", "cached_tokens")
"""Written beside it, for the access log and showback."""
USAGE_SCAN_TAIL_BYTES = 4096
"""A JSON answer's usage object is searched in its last this-many bytes plus the newest chunk (the object is a few
hundred bytes; the body itself is never held)."""
MAX_EVENT_LINE_BYTES = 1 << 20
"""A ``data:`` line longer than this is passed on without being searched for usage (bounded memory per stream; an
OpenAI chunk is one token's delta, a few hundred bytes)."""
METERING_LUA_NAME = "metering"
"""The name of the local bootstrap's second Lua filter (``envoy.filters.http.lua/metering``, the shape of the
names Envoy Gateway generates for each Lua of an EnvoyExtensionPolicy)."""


def metering_lua(weights: TokenWeights | None = None) -> str:
    """The metering script (Envoy's Lua filter API: ``headers():replace``, ``bodyChunks()``, ``getBytes``,
    ``setBytes``, ``streamInfo():dynamicMetadata():set``), charging at ``weights`` (default 1 each)."""
    weights = weights or TokenWeights()
    if "]]" in USAGE_COMMENT_PREFIX or '"' in USAGE_COMMENT_PREFIX:
        raise ValueError("the usage comment prefix must be a plain string")
    return _LUA.format(
        namespace=METADATA_NAMESPACE,
        charged=CHARGED_KEY,
        header=USAGE_METER_HEADER,
        running=USAGE_METER_RUNNING,
        prefix=USAGE_COMMENT_PREFIX,
        tail=USAGE_SCAN_TAIL_BYTES,
        max_line=MAX_EVENT_LINE_BYTES,
        period=PERIOD_HEADER,
        w_input=weights.input,
        w_cached=weights.cached,
        w_output=weights.output,
        scale=WEIGHT_SCALE,
    )


METERING_LUA_HEAD = "-- Token metering (issue 30): the answer's usage into dynamic metadata as the body passes.\n"
"""The script's first line, whatever its weights: how a rendering's summary tells the metering script apart."""


def is_metering_lua(script: str) -> bool:
    return script.startswith(METERING_LUA_HEAD)


# Doubled braces are Lua's; single ones are filled in by metering_lua().
_LUA = (
    METERING_LUA_HEAD
    + r"""local NS = "{namespace}"
local PREFIX = "{prefix}"
-- Weights in thousandths of a token (edge.tokenLimits.weights): uncached input, cached input, output.
local W_INPUT, W_CACHED, W_OUTPUT, SCALE = {w_input}, {w_cached}, {w_output}, {scale}

function envoy_on_request(handle)
  -- Whatever the client sent: the server reports a stream's running usage only to the edge.
  handle:headers():replace("{header}", "{running}")
  -- The billing period (a calendar month in UTC) the monthly budget's rule counts apart.
  handle:headers():replace("{period}", os.date("!%Y-%m"))
end

local function count(text, name)
  local value = string.match(text, '"' .. name .. '"%s*:%s*(%d+)')
  if value == nil then return nil end
  return tonumber(value)
end

-- The counts of one usage object's text, or nil when it lacks one of them.
local function counts(text)
  local prompt = count(text, "prompt_tokens")
  local completion = count(text, "completion_tokens")
  if prompt == nil or completion == nil then return nil end
  return {{prompt, completion, count(text, "cached_tokens") or 0}}
end

-- The last complete "usage": {{...}} object in text (nested objects allowed), as counts.
local function last_usage(text)
  local found = nil
  local from = 1
  while true do
    local s, e = string.find(text, '"usage"%s*:%s*{{', from)
    if s == nil then return found end
    local depth, i = 1, e + 1
    while depth > 0 do
      local b = string.find(text, "[{{}}]", i)
      if b == nil then break end
      if string.sub(text, b, b) == "{{" then depth = depth + 1 else depth = depth - 1 end
      i = b + 1
    end
    if depth == 0 then
      found = counts(string.sub(text, e, i - 1)) or found
    end
    from = e + 1
  end
end

-- The weighted charge, rounded up, in integers (a double holds them exactly): cached tokens are part of the prompt.
local function charge(prompt, completion, cached)
  if cached > prompt then cached = prompt end
  local milli = W_INPUT * (prompt - cached) + W_CACHED * cached + W_OUTPUT * completion
  local rest = milli % SCALE
  local whole = (milli - rest) / SCALE
  if rest > 0 then whole = whole + 1 end
  return whole
end

local function record(handle, usage)
  if usage == nil then return end
  local md = handle:streamInfo():dynamicMetadata()
  md:set(NS, "prompt_tokens", usage[1])
  md:set(NS, "completion_tokens", usage[2])
  md:set(NS, "cached_tokens", usage[3])
  md:set(NS, "{charged}", charge(usage[1], usage[2], usage[3]))
end

-- A JSON answer: the usage object is at its end; only a bounded tail is kept between chunks.
local function meter_body(handle)
  local tail = ""
  for chunk in handle:bodyChunks() do
    local text = tail .. chunk:getBytes(0, chunk:length())
    if string.find(text, '"usage"', 1, true) then
      record(handle, last_usage(text))
    end
    tail = string.sub(text, -{tail})
  end
end

-- Whether rest (a line without its end yet) may still turn out to be a usage comment.
local function may_be_comment(rest)
  if #rest < #PREFIX then return string.sub(PREFIX, 1, #rest) == rest end
  return string.sub(rest, 1, #PREFIX) == PREFIX
end

-- A stream: whole lines are read; usage comments are recorded and removed, everything else passes at once.
local function meter_stream(handle)
  local held = ""      -- the start of a line that may be a usage comment, not passed on yet
  local passing = false -- inside a line whose start already went out with an earlier chunk
  local line = ""      -- the data line being passed, for the usage search
  for chunk in handle:bodyChunks() do
    local data = held .. chunk:getBytes(0, chunk:length())
    held = ""
    local out = {{}}
    local pos, n = 1, #data
    while pos <= n do
      local nl = string.find(data, "\n", pos, true)
      local stop = nl or n
      local piece = string.sub(data, pos, stop)
      if passing then
        out[#out + 1] = piece
        if #line + #piece <= {max_line} then line = line .. piece else line = "" end
      elseif nl == nil and may_be_comment(piece) then
        held = piece
      elseif string.sub(piece, 1, #PREFIX) == PREFIX then
        record(handle, counts(piece))
      else
        out[#out + 1] = piece
        line = piece
      end
      passing = nl == nil and held == ""
      if nl ~= nil then
        if string.sub(line, 1, 5) == "data:" and string.find(line, '"usage"', 1, true) then
          record(handle, last_usage(line))
        end
        line = ""
      end
      pos = stop + 1
    end
    chunk:setBytes(table.concat(out))
  end
end

function envoy_on_response(handle)
  local kind = handle:headers():get("content-type") or ""
  if string.find(kind, "text/event-stream", 1, true) then
    meter_stream(handle)
  elseif string.find(kind, "json", 1, true) then
    meter_body(handle)
  end
end
"""
)
