"""How the edge picks a replica for each request (issue 29, the request scheduler), as plain data.

Three modes (``edge.routing.mode``), each rendered the same way for the cluster (Envoy Gateway objects,
``components.edge.routing``) and for the local rig (the Envoy bootstrap, ``inferctl.serving.edge_envoy``):

- ``round-robin``: every replica in turn, whatever it holds (Envoy's ``ROUND_ROBIN``; Envoy Gateway's
  ``loadBalancer.type: RoundRobin``). Kept for comparison: what the issue calls today's behaviour.
- ``envoy``: prefix affinity with a load bound and no extra controller. The edge's Lua filter computes
  ``x-prefix-affinity`` from the first ``prefixTokens`` tokens' worth of the prompt (``BYTES_PER_TOKEN`` bytes a
  token, the estimate llm-d's approximate prefix scorer packs); Envoy Gateway's ``consistentHash`` on that header
  (Maglev) sends equal prefixes to the same replica, whose prefix cache then skips their prefill. Envoy Gateway
  v1.9.0 renders Maglev with no load bound (``internal/xds/translator/cluster.go``: only ``table_size``), so a hot
  prefix would pin one replica: an ``EnvoyPatchPolicy`` adds Envoy's own bounded load
  (``consistent_hashing_lb_config.hash_balance_factor``) to the route's cluster. A replica already holding more
  than its share (``loadBoundPercent`` of the average in flight) is skipped for the next replica in a
  hash-seeded order (Envoy ``thread_aware_lb_impl.cc`` ``BoundedLoadHashingLoadBalancer``). A prompt shorter
  than the window gets no key: Envoy then draws a random replica (the same file: no hash, ``random_.random()``),
  still under the bound; a short prompt has little prefill to save.
- ``inference-pool``: the cluster's endpoint picker (llm-d's EPP, ``catalog.endpoint_picker``), called by the
  gateway's ext_proc and failing open to least request (``BackendTrafficPolicy.loadBalancer.endpointOverride``
  "If the override endpoints are not available, the configured load balancer policy will be used as fallback",
  api/v1alpha1/loadbalancer_types.go v1.9.0). Locally the edge balances by least request: the picker cannot run
  here (no registry carries its image).

Optionally per tenant (``perTenant``): the key is salted with the caller's credential, so a client's timing can
never tell whether another client's prompt is cached on the replica it lands on (prefix reuse then happens only
within a client; clients sharing one system prompt each warm their own replica).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from inference_platform.catalog.serving_contract import OPENAI_CHAT_PATH, OPENAI_COMPLETIONS_PATH

# The key's hash: h = (h * 257 + byte) mod 4294967291 (the largest prime below 2^32); h * 257 + 255 < 2^41 stays
# exact in a Lua number (a double).
_SEED, _MULTIPLIER, _MODULUS = 7, 257, 4294967291

RoutingMode = Literal["inference-pool", "envoy", "round-robin"]
ROUTING_MODES: Final[tuple[RoutingMode, ...]] = ("inference-pool", "envoy", "round-robin")
PRODUCTION_DEFAULT_MODE: Final[RoutingMode] = "inference-pool"
DEVELOPMENT_DEFAULT_MODE: Final[RoutingMode] = "envoy"

AFFINITY_HEADER: Final = "x-prefix-affinity"
"""Set by the edge's Lua filter (any value a client sends is removed first: a client never picks its replica)."""
# llm-d-router v0.10.0 pkg/epp/framework/plugins/requestcontrol/dataproducer/tokenizer/estimate.go: without a
# tokenizer its approximate prefix index packs about 4 bytes per pseudo-token; the same estimate here.
BYTES_PER_TOKEN: Final = 4
DEFAULT_PREFIX_TOKENS: Final = 256
"""A quarter of a thousand tokens: shorter than the shared system prompts the prefix cache pays off on, long
enough that short one-off prompts (little prefill to save) are spread instead."""
MIN_PREFIX_TOKENS, MAX_PREFIX_TOKENS = 16, 8192
# Envoy: "hash_balance_factor ... values lower than 100 are invalid" (api/envoy/config/cluster/v3/cluster.proto
# ConsistentHashingLbConfig, uint32 gte 100); 150 follows the bounded-loads paper's c = 1.5 example (its
# replicas then carry at most 1.5x the average in flight).
DEFAULT_LOAD_BOUND_PERCENT: Final = 150
MIN_LOAD_BOUND_PERCENT, MAX_LOAD_BOUND_PERCENT = 100, 1000
# Envoy Gateway v1.9.0 ConsistentHash.TableSize default (api/v1alpha1/loadbalancer_types.go).
MAGLEV_TABLE_SIZE: Final = 65537
HASHED_PATHS: Final = (OPENAI_CHAT_PATH, OPENAI_COMPLETIONS_PATH)
"""Where a prompt is: the only requests whose body the Lua reads (a batch upload is never buffered by it)."""
PROMPT_FIELDS: Final = ("messages", "prompt")
"""The JSON keys the window starts at: chat ``messages`` (roles and contents in order, as llm-d's estimate reads
them), else completions' ``prompt``."""


@dataclass(frozen=True, kw_only=True)
class Routing:
    """The routing mode and the ``envoy`` mode's knobs."""

    mode: RoutingMode = DEVELOPMENT_DEFAULT_MODE
    """Default ``envoy`` here; the settings pick ``inference-pool`` in production."""
    prefix_tokens: int = DEFAULT_PREFIX_TOKENS
    """Default 256. Tokens' worth of prompt hashed into the affinity key; shorter prompts get no key."""
    per_tenant: bool = False
    """Default ``false``. Salt the key with the caller's credential: prefix reuse only within one client."""
    load_bound_percent: int = DEFAULT_LOAD_BOUND_PERCENT
    """Default 150, 100-1000. A replica takes a hashed request only while it holds at most this share (in
    percent) of the average requests in flight; else the next replica in a hash-seeded order."""

    def __post_init__(self) -> None:
        if self.mode not in ROUTING_MODES:
            raise ValueError(f"routing mode {self.mode!r} is not one of {', '.join(ROUTING_MODES)}")
        if not MIN_PREFIX_TOKENS <= self.prefix_tokens <= MAX_PREFIX_TOKENS:
            raise ValueError(f"prefix_tokens {self.prefix_tokens} out of {MIN_PREFIX_TOKENS}-{MAX_PREFIX_TOKENS}")
        if not MIN_LOAD_BOUND_PERCENT <= self.load_bound_percent <= MAX_LOAD_BOUND_PERCENT:
            raise ValueError(f"load_bound_percent {self.load_bound_percent} out of 100-1000")

    @property
    def prefix_bytes(self) -> int:
        return self.prefix_tokens * BYTES_PER_TOKEN

    @property
    def hashes_prefix(self) -> bool:
        """True when the edge computes the affinity key (the ``envoy`` mode)."""
        return self.mode == "envoy"

    def describe(self) -> str:
        """One line for the plan and the PR comment."""
        if self.mode == "envoy":
            tenant = ", per tenant" if self.per_tenant else ""
            return (
                f"envoy: prefix affinity on the first {self.prefix_tokens} tokens{tenant}, consistent hash (Maglev) "
                f"bounded at {self.load_bound_percent}% of the average load"
            )
        if self.mode == "round-robin":
            return "round-robin: every replica in turn"
        return (
            "inference-pool: llm-d's endpoint picker (llm-d-router v0.10.0) through ext_proc, fail-open to least "
            "request"
        )


def bounded_load_slots(*, overall_active: int, replicas: int, load_bound_percent: int) -> int:
    """How many active requests one of ``replicas`` equal replicas may already hold and still be picked, when
    ``overall_active`` requests are active in the cluster at the pick.

    Envoy (``BoundedLoadHashingLoadBalancer::hostOverloadFactor``): ``total_slots = ((overall_active + 1) *
    hash_balance_factor + 99) / 100``; ``slots = max(1, ceil(total_slots * weight))``; a host is taken while
    ``host_active <= slots``. Equal weights never leave every host overloaded (their loads add up to
    ``overall_active`` < ``total_slots``).

    "Active" is Envoy's ``rq_active`` of the host: it counts a request from when it is attached to a ready upstream
    connection (``ConnPoolImplBase::attachStreamToClient``) until its stream closes; a request picked while its
    connection is still being opened waits as a pending stream and is not counted (``newStream`` ->
    ``newPendingStream``; envoyproxy/envoy source/common/conn_pool/conn_pool_base.cc at 00dcf3fb, the version stored
    for reading here: the repository is too large to fetch at the 1.40 tag we run). So a burst that needs new connections to a replica
    can put more on it than ``load_bound`` says: every pick made while other picks of it wait for their connections
    sees those as absent. Measured on the routing trace's hot part (tests/bench/test_routing_trace.py)."""
    if replicas < 1 or overall_active < 0:
        raise ValueError("replicas must be >= 1 and overall_active >= 0")
    total_slots = ((overall_active + 1) * load_bound_percent + 99) // 100
    return max(1, -(-total_slots // replicas))


def load_bound(*, in_flight_elsewhere: int, replicas: int, load_bound_percent: int) -> int:
    """The most active requests one of ``replicas`` equal replicas holds right after Envoy's bounded-load hash picked
    it, when ``in_flight_elsewhere`` other requests were active in the cluster at the pick: its slots
    (``bounded_load_slots``) plus the new request. It counts only attached requests, as Envoy does."""
    if in_flight_elsewhere < 0:
        raise ValueError("in_flight_elsewhere must be >= 0")
    return (
        bounded_load_slots(overall_active=in_flight_elsewhere, replicas=replicas, load_bound_percent=load_bound_percent)
        + 1
    )


def affinity_lua(routing: Routing, credential_headers: tuple[str, ...]) -> str:
    """The Lua (Envoy's Lua filter API: ``headers()``, ``body()``, ``getBytes``, ``length``; plain Lua 5.1) that sets
    ``AFFINITY_HEADER`` to an hash of the prompt's first ``prefix_bytes`` bytes, starting at its
    ``PROMPT_FIELDS`` key; the same text in both renderings. The body is read only on ``HASHED_PATHS``, only with
    a credential present when ``credential_headers`` is not empty (api_key_auth refuses the rest next), and only
    up to the connection's buffer limit (the ClientTrafficPolicy's ``connection.bufferLimit``)."""
    paths = ", ".join(f'["{p}"] = true' for p in HASHED_PATHS)
    fields = ", ".join(f'"{f}"' for f in PROMPT_FIELDS)
    creds = ", ".join(f'"{h}"' for h in credential_headers)
    salt = "true" if routing.per_tenant else "false"
    return (
        f"-- Prefix affinity (issue 29): {AFFINITY_HEADER} = hash of the prompt's first {routing.prefix_bytes} "
        "bytes, for Envoy's consistent hash.\n"
        f"local PATHS = {{{paths}}}\n"
        f"local FIELDS = {{{fields}}}\n"
        f"local CREDENTIALS = {{{creds}}}\n"
        f"local WINDOW = {routing.prefix_bytes}\n"
        f"local PER_TENANT = {salt}\n"
        "-- A polynomial hash mod the largest 32-bit prime: exact in doubles, no bit library (gopher-lua, which\n"
        "-- Envoy Gateway's strict Lua validator runs, has none).\n"
        "local function mix(h, s)\n"
        "  for i = 1, #s do\n"
        f"    h = (h * {_MULTIPLIER} + string.byte(s, i)) % {_MODULUS}\n"
        "  end\n"
        "  return h\n"
        "end\n"
        "function envoy_on_request(handle)\n"
        "  local headers = handle:headers()\n"
        f'  headers:remove("{AFFINITY_HEADER}")\n'
        '  local path = headers:get(":path") or ""\n'
        '  local query = string.find(path, "?", 1, true)\n'
        "  if query then path = string.sub(path, 1, query - 1) end\n"
        '  if headers:get(":method") ~= "POST" or not PATHS[path] then return end\n'
        "  local credential = nil\n"
        "  for _, name in ipairs(CREDENTIALS) do\n"
        "    credential = credential or headers:get(name)\n"
        "  end\n"
        "  if #CREDENTIALS > 0 and credential == nil then return end\n"
        "  local body = handle:body()\n"
        "  if body == nil then return end\n"
        "  local head = body:getBytes(0, math.min(body:length(), WINDOW + 64))\n"
        "  local start = nil\n"
        "  for _, field in ipairs(FIELDS) do\n"
        "    start = start or string.find(head, '\"' .. field .. '\"', 1, true)\n"
        "  end\n"
        "  if start == nil or body:length() < start - 1 + WINDOW then return end\n"
        "  local window = body:getBytes(start - 1, WINDOW)\n"
        f"  local h = mix({_SEED}, window)\n"
        "  if PER_TENANT and credential ~= nil then h = mix(h, credential) end\n"
        "  -- body() yielded: the headers object taken before it is out of scope now (Envoy: 'object used outside\n"
        "  -- of proper scope'), so take them again; they are not yet sent on, so they may still change.\n"
        f'  handle:headers():replace("{AFFINITY_HEADER}", string.format("%08x", h))\n'
        "end\n"
    )


def affinity_key(body: bytes, routing: Routing, credential: str | None = None) -> str | None:
    """What ``affinity_lua`` sets for ``body`` (None: no key), for tests and the trace's expectations."""
    head = body[: routing.prefix_bytes + 64]
    starts = [head.find(f'"{f}"'.encode()) for f in PROMPT_FIELDS]
    start = next((s for s in starts if s >= 0), -1)
    if start < 0 or len(body) < start + routing.prefix_bytes:
        return None
    h = _mix(_SEED, body[start : start + routing.prefix_bytes])
    if routing.per_tenant and credential is not None:
        h = _mix(h, credential.encode())
    return f"{h:08x}"


def _mix(h: int, data: bytes) -> int:
    for byte in data:
        h = (h * _MULTIPLIER + byte) % _MODULUS
    return h
