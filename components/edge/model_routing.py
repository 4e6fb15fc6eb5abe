"""Several models behind the one OpenAI URL: body-based routing by ``model``, a weighted canary, a tester header,
``/v1/models`` listing every model and alias, and fallback to another pool before the first byte.

Pure (no Pulumi): the cluster's Gateway API objects (``with_model_routing``) and the local Envoy's bootstrap
(``inferctl.serving.edge_models``) are rendered from one :class:`ModelRouting`. How each piece maps onto Envoy
Gateway v1.9.0, as read at the tag (tests/data/upstream/model_routing_facts.json pins every fact with its file):

- **Routing on a body field.** Envoy Gateway has no body match; Envoy AI Gateway v1.1.0 reads ``model`` from the
  body in an ext_proc, sets the ``x-ai-eg-model`` header and answers with ``clear_route_cache`` so the route is
  chosen again on that header (``internal/extproc/processor_impl.go``, ``api/v1alpha1/shared_types.go``). We do
  the same without a second server: a Lua script (an ``EnvoyExtensionPolicy``, Lua switched on by the controller's
  ``extensionApis.enableLua``) finds the top-level ``model`` of the JSON body, maps an alias to its model, writes
  ``x-inference-model`` and calls ``clearRouteCache()``; the HTTPRoute's rules match that header. Envoy Gateway
  runs Lua as a per-route filter (``internal/xds/translator/lua.go``: disabled at the listener, enabled on the
  routes the policy targets), so the script must be on the rule a request matches *before* the header is set:
  the OpenAI rule without a header match, which the script shares with the duplicate-credential check.
- **Weights and testers.** The script draws the canary's share itself: a request for a model with a canary and no
  tester header gets ``<testerHeader>: always`` with probability ``weight``/100 (LuaJIT's ``math.random``; Envoy
  opens the standard libraries in each worker's Lua state, ``source/extensions/filters/common/lua/lua.cc``). A
  rule with that header match (Gateway API: more header matches take precedence) sends it to the canary's
  Service; the model's other rule sends everything else to the current one. Not Gateway API weighted
  ``backendRefs``: Envoy Gateway v1.9.0 renders those as weighted localities of one cluster, and its consistent
  hash (``edge.routing.mode envoy``) and the picker's endpoint override (``inference-pool``) drop locality
  weights (``internal/xds/translator/cluster.go``), so the split would follow the pods, not the weight. Drawn
  before the route is chosen, the share is the weight under every balancer, and each version keeps its own.
  Testers send ``<testerHeader>: always`` (the canary) or ``current`` (the current version; the gate measures
  both side by side), which the script leaves as they are; it removes any other value and a client's
  ``x-inference-model``.
- **Fallback before the first byte.** A ``Backend`` with ``fallback: true`` in the rule (``api/v1alpha1/
  backend_types.go``): Envoy Gateway then keeps the rule's backends in one cluster, the fallback at priority 1
  (``internal/gatewayapi/route.go`` ``weightedRuleBackendsMustBeInOneCluster``, ``Priority = 1``), each
  backendRef a locality (``internal/xds/translator/cluster.go`` ``buildWeightedLocalities``). The Gateway's retry
  gets ``numAttemptsPerPriority: 2`` (``internal/xds/translator/route.go``: Envoy's ``previous_priorities`` retry
  priority): a request that fails
  before any byte reached the server (the existing ``connect-failure``/``reset-before-request`` triggers) is
  retried once on another host of its own priority (the current version, for a canary), then on the fallback.
  A canary always falls back to its model's current version. ``ModelRoute.fallback`` (another model, only where
  ``models.fallbacks`` writes it) is rendered the same way; that model's server answers the first one's name too.
- **The list.** ``GET /v1/models`` and ``GET /v1/models/<id>`` are answered by the edge itself (an
  ``HTTPRouteFilter`` ``directResponse``, ``api/v1alpha1/httproutefilter_types.go``) on the same HTTPRoute, so
  the SecurityPolicy's API keys apply to them as to every rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from inference_platform.catalog.edge_policy import edge_error_body
from inference_platform.catalog.endpoint_picker import PROFILE_HEADER, RolloutProfile
from inference_platform.catalog.serving_contract import (
    OPENAI_CHAT_PATH,
    OPENAI_COMPLETIONS_PATH,
    OPENAI_MODELS_PATH,
)
from inference_platform.components.edge.routing import CLUSTER_TYPE, route_cluster_name
from inference_platform.components.edge.token_metering import is_metering_lua

MODEL_HEADER = "x-inference-model"
"""The header the script writes from the body's ``model`` (after aliases), and the rules match."""
TESTER_VALUE = "always"
"""The tester header's value that sends a request to the canary."""
CURRENT_VALUE = "current"
"""The tester header's value that sends a request to the current version (the gate measures both side by side)."""
GENERATION_PATHS = (OPENAI_CHAT_PATH, OPENAI_COMPLETIONS_PATH)
NUM_ATTEMPTS_PER_PRIORITY = 2
"""One more try on the rule's own priority (another replica, or the current version beside a canary), then the
fallback's."""
MODEL_LABEL = "inference.platform/model"
"""On a fallback Backend: the model its Service serves (the pack's ``edge-fallback-backends-in-cluster`` reads it)."""
ENVOY_GATEWAY_API = "gateway.envoyproxy.io/v1alpha1"
GATEWAY_API = "gateway.networking.k8s.io/v1"
Manifest = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ModelBackend:
    """A rollout's Service (its OpenAI port)."""

    service: str
    namespace: str
    port: int

    @property
    def fqdn(self) -> str:
        return f"{self.service}.{self.namespace}.svc.cluster.local"


@dataclass(frozen=True, kw_only=True)
class ModelRoute:
    """One public model: its current version, maybe a canary beside it, maybe a fallback model."""

    name: str
    current: ModelBackend
    canary: ModelBackend | None = None
    canary_weight: int = 0
    """0-100: the canary's share of this model's requests."""
    fallback: str | None = None
    """Another model's name: retried there before the first byte (``models.fallbacks``; that model's server answers
    this model's name too, as itself: ``serving.fallbackFor``). None: a canary falls back to ``current``, a model
    without a canary falls back nowhere."""


@dataclass(frozen=True, kw_only=True)
class ModelRouting:
    """Every model the stack's one URL serves, its aliases and the canary testers' header."""

    models: tuple[ModelRoute, ...]
    """The stack's own model first."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    tester_header: str = "x-canary"
    created: int = 0
    """The ``created`` time of the listed models (the stack's deploy time is not known offline: 0)."""
    picker_profiles: bool = False
    """The endpoint picker schedules (``edge.routing.mode inference-pool``): the script also names the request's
    rollout in ``catalog.endpoint_picker.PROFILE_HEADER``, the profile the picker runs (``rollout_profiles``)."""

    def __post_init__(self) -> None:
        names = [m.name for m in self.models]
        problems = []
        if not names or len(set(names)) != len(names):
            problems.append(f"model names must be distinct and at least one, got {names}")
        problems += [f"alias {a!r} is a model's name" for a in self.aliases if a in names]
        problems += [f"alias {a!r} -> {t!r}: no such model" for a, t in self.aliases.items() if t not in names]
        for m in self.models:
            if m.fallback is not None and (m.fallback not in names or m.fallback == m.name):
                problems.append(f"{m.name}: fallback {m.fallback!r} is not another model")
            if not 0 <= m.canary_weight <= 100 or (m.canary is None and m.canary_weight):
                problems.append(f"{m.name}: canary weight {m.canary_weight} without a canary or outside 0-100")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def public_ids(self) -> tuple[str, ...]:
        """What ``/v1/models`` lists: every model, then every alias."""
        return (*(m.name for m in self.models), *self.aliases)

    def model(self, name: str) -> ModelRoute:
        return next(m for m in self.models if m.name == name)

    def targets(self) -> dict[str, str]:
        """Public id -> the model it routes to."""
        return {**{m.name: m.name for m in self.models}, **self.aliases}

    def model_fallback(self, route: ModelRoute) -> ModelBackend | None:
        """Where a request the current version cannot take goes: the current version of the model
        ``models.fallbacks`` names, else nowhere. (A canary's requests fall back to its model's current version.)"""
        return self.model(route.fallback).current if route.fallback is not None else None

    def card(self, ident: str) -> dict[str, Any]:
        """The OpenAI model object (the server's own shape, inference_image/openai_api/service.py)."""
        return {"id": ident, "object": "model", "created": self.created, "owned_by": "inference-platform"}

    def list_body(self) -> str:
        return json.dumps({"object": "list", "data": [self.card(i) for i in self.public_ids]}, separators=(",", ":"))

    def card_body(self, ident: str) -> str:
        return json.dumps(self.card(ident), separators=(",", ":"))

    def canary_weights(self) -> dict[str, int]:
        """Model -> its canary's share in percent, for the models whose canary takes drawn traffic."""
        return {m.name: m.canary_weight for m in self.models if m.canary is not None and m.canary_weight}

    def rollout_profiles(self) -> tuple[RolloutProfile, ...]:
        """One picker profile per rollout in the stack's own namespace (the picker watches pods there only): each
        named by its Service and keeping its pods (the rollout's ``app.kubernetes.io/name``, the Service's own
        selector key, components/serving/inference_service.py). The stack's own model's current version first: the
        profile of a request that names none. A rollout elsewhere gets no profile: its requests run the default
        one, whose pick lies outside their rule, and least request answers (the endpoint override's fallback)."""
        home = self.models[0].current.namespace
        backends = [b for m in self.models for b in (m.current, m.canary) if b is not None and b.namespace == home]
        return tuple(RolloutProfile(b.service, {"app.kubernetes.io/name": b.service}) for b in backends)

    def _profile_table(self) -> dict[str, tuple[str | None, str | None]]:
        """Model -> (its current version's profile, its canary's), None where the rollout has none."""
        named = {p.name for p in self.rollout_profiles()}

        def profile(backend: ModelBackend | None) -> str | None:
            return backend.service if backend is not None and backend.service in named else None

        return {m.name: (profile(m.current), profile(m.canary)) for m in self.models}

    @property
    def lua(self) -> str:
        profiles = self._profile_table() if self.picker_profiles else None
        return routing_lua(self.targets(), self.tester_header, self.canary_weights(), profiles)


def routing_lua(
    targets: Mapping[str, str],
    tester_header: str,
    canaries: Mapping[str, int] | None = None,
    profiles: Mapping[str, tuple[str | None, str | None]] | None = None,
) -> str:
    """The script: the body's top-level ``model`` (an alias mapped to its model) into ``x-inference-model``, then
    the route chosen again. A model the stack does not serve is a 404 in OpenAI's shape; two top-level ``model``
    keys are a 400 (a JSON reader keeps the last, this one would route on the first). Bounded: it reads the body
    the route's buffer limit already bounds, once, jumping from one structural character to the next.

    ``canaries`` (model -> percent): a request for such a model without a tester header is sent to the canary
    (the tester header set to ``always``) with that probability, each request drawn on its own.

    ``profiles`` (model -> its current version's picker profile, its canary's): the script removes a client's
    ``PROFILE_HEADER`` and writes the profile of the rollout the request's rule serves (the canary's when the tester
    header says ``always`` and the model has one). A request it names none for (no ``model``, or a rollout without
    a profile) runs the picker's default profile."""
    rollouts = ",".join(
        f"[{_lua_string(model)}]={{current={_lua_string(current) if current else 'nil'},"
        f"canary={_lua_string(canary) if canary else 'nil'}}}"
        for model, (current, canary) in sorted((profiles or {}).items())
    )
    profile_header = _lua_string(PROFILE_HEADER) if profiles is not None else "nil"
    table = ",".join(f"[{_lua_string(k)}]={_lua_string(v)}" for k, v in sorted(targets.items()))
    shares = ",".join(f"[{_lua_string(k)}]={int(v)}" for k, v in sorted((canaries or {}).items()))
    known = ", ".join(sorted(targets))
    unknown = edge_error_body(
        f"The model does not exist; this endpoint serves {known}", "not_found_error", "model_not_found"
    )
    duplicate = edge_error_body("The body holds more than one model", "invalid_request_error", "invalid_model")
    return f"""local MODELS = {{{table}}}
local HEADER = {_lua_string(MODEL_HEADER)}
local TESTER = {_lua_string(tester_header)}
local ALWAYS = {_lua_string(TESTER_VALUE)}
local CURRENT = {_lua_string(CURRENT_VALUE)}
local UNKNOWN = {_lua_string(unknown)}
local DUPLICATE = {_lua_string(duplicate)}
-- Percent of each model's requests drawn for its canary (models.canary.weight).
local CANARY = {{{shares}}}
-- The endpoint picker's scheduling profile of each model's rollouts (nil: no picker, edge.routing.mode not
-- inference-pool); the picker's header-profile-handler runs the profile the header names.
local PROFILE = {profile_header}
local ROLLOUTS = {{{rollouts}}}
-- Each worker's Lua state draws its own sequence. os.time() alone would give every worker started in the same second
-- the same seed, and so the same draws (correlated shares, a wider spread than the weight's binomial one): a fresh
-- table's address, distinct in each state, is added.
local ADDRESS = tonumber(string.match(tostring({{}}), "0x(%x+)") or "0", 16)
math.randomseed(os.time() + ADDRESS % 2147483647)

-- The value of the JSON object's top-level "model" string (nil when absent; false when not a plain string), how
-- many top-level "model" keys there are, and where the value starts in s. Strings are skipped whole (escapes included), so a "model" inside a message is never taken.
local function top_level_model(s)
  local depth, i, found, count, at_value = 0, 1, nil, 0, nil
  while true do
    local at = s:find('[\\"{{}}%[%]]', i)
    if at == nil then return found, count, at_value end
    local c = s:sub(at, at)
    if c == '"' then
      local j = at + 1
      while true do
        local q = s:find('[\\\\"]', j)
        if q == nil then return found, count, at_value end
        if s:sub(q, q) == '\\\\' then j = q + 2 else j = q; break end
      end
      if depth == 1 and s:sub(at + 1, j - 1) == "model" then
        local _, colon_end = s:find("^%s*:%s*", j + 1)
        if colon_end ~= nil then
          count = count + 1
          local value = s:match('^"([^"\\\\]*)"', colon_end + 1)
          if found == nil then found, at_value = value or false, colon_end + 2 end
        end
      end
      i = j + 1
    elseif c == "{{" or c == "[" then depth = depth + 1; i = at + 1
    else depth = depth - 1; i = at + 1 end
  end
end

local function refuse(handle, status, body)
  handle:respond({{[":status"] = status, ["content-type"] = "application/json"}}, body)
end

function envoy_on_request(handle)
  local headers = handle:headers()
  headers:remove(HEADER)
  if PROFILE ~= nil then headers:remove(PROFILE) end
  local tester = headers:get(TESTER)
  if tester ~= ALWAYS and tester ~= CURRENT then headers:remove(TESTER); tester = nil end
  if headers:get(":method") ~= "POST" then return end
  local body = handle:body()
  if body == nil then return end
  local raw = body:getBytes(0, body:length())
  local model, count, at = top_level_model(raw)
  if count > 1 then return refuse(handle, "400", DUPLICATE) end
  if model == nil then return end  -- no model: the server answers its own 400
  local target = model and MODELS[model]
  if not target then return refuse(handle, "404", UNKNOWN) end
  if target ~= model then
    -- An alias: the server answers only its model's own name, so the body names it (the answer says which).
    body:setBytes(raw:sub(1, at - 1) .. target .. raw:sub(at + #model))
  end
  -- The headers object does not outlive body(), which yields until the body is in (Envoy's Lua filter).
  headers = handle:headers()
  headers:replace(HEADER, target)
  local share = CANARY[target]
  if tester == nil and share ~= nil and math.random(100) <= share then headers:replace(TESTER, ALWAYS) end
  local rollout = PROFILE ~= nil and ROLLOUTS[target] or nil
  if rollout ~= nil then
    local profile = rollout.current
    if rollout.canary ~= nil and headers:get(TESTER) == ALWAYS then profile = rollout.canary end
    if profile ~= nil then headers:replace(PROFILE, profile) end
  end
  handle:clearRouteCache()
end
"""


def _lua_string(value: str) -> str:
    """A Lua string literal (JSON's escapes are Lua's for everything we write: quotes, backslashes, ASCII)."""
    return json.dumps(value, ensure_ascii=True)


# ----------------------------------------------------------------------------------------- the cluster's objects


def with_model_routing(
    objects: list[Manifest], routing: ModelRouting, *, gateway: str, namespace: str
) -> list[Manifest]:
    """The gateway's objects (``gateway_api.render_gateway_objects``) with model routing added: the model rules
    put first on the OpenAI HTTPRoute (``<gateway>-http``; its name and URN unchanged), the script in that route's one
    EnvoyExtensionPolicy at ``routing_index`` (or a policy of its own when the route has none), the edge's own
    answers for ``/v1/models``, the fallback Backends, ``numAttemptsPerPriority`` on the Gateway's retry, and the
    ReferenceGrant extended to every rollout's Service."""
    out = [json.loads(json.dumps(o)) for o in objects]
    route = next(o for o in out if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == f"{gateway}-http")
    meta = {"namespace": namespace, "labels": {"app.kubernetes.io/part-of": "inference-edge"}}
    filters = [_direct_response(f"{gateway}-models", routing.list_body(), meta)]
    filters += [_direct_response(f"{gateway}-model-{i}", routing.card_body(ident), meta) for i, ident in
                enumerate(routing.public_ids)]  # fmt: skip
    backends: dict[str, Manifest] = {}
    rules: list[dict[str, Any]] = [_listing_rule(OPENAI_MODELS_PATH, filters[0])]
    rules += [
        _listing_rule(f"{OPENAI_MODELS_PATH}/{ident}", f)
        for ident, f in zip(routing.public_ids, filters[1:], strict=True)
    ]
    for model in routing.models:
        rules += _model_rules(routing, model, gateway, namespace, meta, backends)
    spec = route["spec"]
    spec["rules"] = [*rules, *spec["rules"]]
    _bound_every_rule(out, route)
    # The one EnvoyExtensionPolicy of the OpenAI route (Envoy Gateway v1.9.0 attaches one per route: a second policy
    # would be Conflicted and ignored). It targets that route alone (inference_pool.extension_policies): the script
    # reads every POST body, the batch lane's uploads included, and must not run on their routes.
    extension = next((o for o in out if o["kind"] == "EnvoyExtensionPolicy" and _targets(o, f"{gateway}-http")), None)
    if extension is None:
        refs = [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": f"{gateway}-http"}]
        extension = {
            "apiVersion": ENVOY_GATEWAY_API,
            "kind": "EnvoyExtensionPolicy",
            "metadata": {"name": f"{gateway}-models", **meta},
            "spec": {"targetRefs": refs, "lua": []},
        }
        out.append(extension)
    others = [r["name"] for r in extension["spec"]["targetRefs"] if r["name"] != f"{gateway}-http"]
    if others:
        raise ValueError(f"the OpenAI route's EnvoyExtensionPolicy also targets {', '.join(others)}")
    lua = extension["spec"].setdefault("lua", [])
    lua.insert(routing_index([entry["inline"] for entry in lua]), {"type": "Inline", "inline": routing.lua})
    if backends:
        policy = next(o for o in out if o["kind"] == "BackendTrafficPolicy" and "mergeType" not in o["spec"])
        policy["spec"]["retry"]["numAttemptsPerPriority"] = NUM_ATTEMPTS_PER_PRIORITY
    _grant(out, routing, namespace)
    return [*out, *filters, *backends.values()]


def _bound_every_rule(objects: list[Manifest], route: Manifest) -> None:
    """The load bound (``edge.routing.mode envoy``: ``routing.bounded_load_patch``) on every cluster of the OpenAI
    route. Envoy Gateway makes one cluster per rule with backends, named by the rule's index
    (``routing.route_cluster_name``), and skips a patch whose cluster it cannot find, with a status condition only
    (``internal/xds/translator/jsonpatch.go`` v1.9.0, ``errResourceNotFound``). With the model rules first, the
    route's rule 0 is the edge's ``/v1/models`` answer, which has no cluster: patched as rendered, no model's
    replicas would be bounded. Each rule with backends gets the patch instead."""
    namespace, name = route["metadata"]["namespace"], route["metadata"]["name"]
    first = route_cluster_name(namespace, name, 0)
    indices = [i for i, rule in enumerate(route["spec"]["rules"]) if rule.get("backendRefs")]
    for policy in (o for o in objects if o["kind"] == "EnvoyPatchPolicy"):
        patches = policy["spec"]["jsonPatches"]
        bound = next((p for p in patches if p.get("type") == CLUSTER_TYPE and p.get("name") == first), None)
        if bound is None:
            continue
        others = [p for p in patches if p is not bound]
        policy["spec"]["jsonPatches"] = [
            *({**bound, "name": route_cluster_name(namespace, name, i)} for i in indices),
            *others,
        ]


def routing_index(scripts: list[str]) -> int:
    """Where the routing script goes among the OpenAI route's Lua scripts (both renderings; Envoy Gateway v1.9.0 runs
    a policy's ``lua`` entries in list order): after the edge's own (the credential check first, so a request with
    two keys is refused before its body is read; then the affinity key or the picker's header strip), before the
    token metering script, which stays the last Lua on the request (and so the first on the answer: the usage lines
    it removes reach no other script). A request the script refuses (unknown model, two ``model`` keys) never
    reaches the metering script and is charged nothing."""
    # The metering script whatever the stack's token weights (its first line names it).
    return next((i for i, script in enumerate(scripts) if is_metering_lua(script)), len(scripts))


def _targets(policy: Manifest, route: str) -> bool:
    return any(r.get("kind") == "HTTPRoute" and r.get("name") == route for r in policy["spec"].get("targetRefs", []))


def _model_rules(
    routing: ModelRouting,
    model: ModelRoute,
    gateway: str,
    namespace: str,
    meta: Mapping[str, Any],
    backends: dict[str, Manifest],
) -> list[dict[str, Any]]:
    """The model's rules: everything to the current version (and then its model fallback), except what the script
    drew for the canary or a tester pinned there (the tester header ``always``): the canary, then the current
    version. Gateway API gives the rule with more header matches precedence."""
    header = {"type": "Exact", "name": MODEL_HEADER, "value": model.name}
    fallback = routing.model_fallback(model)
    rest = [_fallback_ref(fallback, gateway, meta, backends, model.fallback or "")] if fallback is not None else []
    rules = [_rule([header], [_service_ref(model.current, namespace), *rest])]
    if model.canary is not None:
        tester = {"type": "Exact", "name": routing.tester_header, "value": TESTER_VALUE}
        current = _fallback_ref(model.current, gateway, meta, backends, model.name)
        rules.insert(0, _rule([header, tester], [_service_ref(model.canary, namespace), current]))
    return rules


def _rule(headers: list[dict[str, str]], refs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "matches": [
            {"path": {"type": "Exact", "value": p}, "method": "POST", "headers": headers} for p in GENERATION_PATHS
        ],
        "backendRefs": refs,
        "timeouts": {"request": "0s"},
    }


def _service_ref(backend: ModelBackend, namespace: str) -> dict[str, Any]:
    ref: dict[str, Any] = {"name": backend.service, "port": backend.port, "weight": 1}
    if backend.namespace != namespace:
        ref["namespace"] = backend.namespace
    return ref


def _fallback_ref(
    backend: ModelBackend, gateway: str, meta: Mapping[str, Any], backends: dict[str, Manifest], model: str
) -> dict[str, Any]:
    """A ``Backend`` (fallback: true) in the gateway's namespace naming the Service by its cluster DNS name."""
    name = f"{gateway}-fallback-{backend.service}"
    backends.setdefault(
        name,
        {
            "apiVersion": ENVOY_GATEWAY_API,
            "kind": "Backend",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {**meta["labels"], MODEL_LABEL: slug_label(model)},
            },
            "spec": {"endpoints": [{"fqdn": {"hostname": backend.fqdn, "port": backend.port}}], "fallback": True},
        },
    )
    return {"group": "gateway.envoyproxy.io", "kind": "Backend", "name": name, "weight": 1}


def slug_label(model: str) -> str:
    """A model name as a label value (``owner/name`` -> ``owner.name``; at most 63 characters)."""
    return model.replace("/", ".")[:63].strip("-_.")


def _listing_rule(path: str, direct: Manifest) -> dict[str, Any]:
    ref = {"type": "ExtensionRef", "extensionRef": {"group": "gateway.envoyproxy.io", "kind": "HTTPRouteFilter",
                                                    "name": direct["metadata"]["name"]}}  # fmt: skip
    return {"matches": [{"path": {"type": "Exact", "value": path}, "method": "GET"}], "filters": [ref]}


def _direct_response(name: str, body: str, meta: Mapping[str, Any]) -> Manifest:
    return {
        "apiVersion": ENVOY_GATEWAY_API,
        "kind": "HTTPRouteFilter",
        "metadata": {"name": name, **meta},
        "spec": {
            "directResponse": {
                "contentType": "application/json",
                "statusCode": 200,
                "body": {"type": "Inline", "inline": body},
            }
        },
    }


def _grant(objects: list[Manifest], routing: ModelRouting, namespace: str) -> None:
    """Every rollout's Service in the ReferenceGrant of its namespace (the routes reach them from the gateway's)."""
    services: dict[str, list[str]] = {}
    for m in routing.models:
        for b in (m.current, *([m.canary] if m.canary else [])):
            if b.namespace != namespace:
                services.setdefault(b.namespace, []).append(b.service)
    for grant in (o for o in objects if o["kind"] == "ReferenceGrant"):
        ns = grant["metadata"]["namespace"]
        have = {t["name"] for t in grant["spec"]["to"]}
        grant["spec"]["to"] += [
            {"group": "", "kind": "Service", "name": s} for s in services.get(ns, []) if s not in have
        ]
