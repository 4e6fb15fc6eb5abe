"""The order of the edge's HTTP filters on the OpenAI route, with routing (issue 29) and token metering (issue 30)
together, derived from both renderings (components/edge/inference_pool.py states it and why).

The cluster's order is computed from the rendered objects the way Envoy Gateway v1.9.0 computes it
(internal/xds/translator/httpfilters.go ``newOrderedHTTPFilter`` and ``sortHTTPFilters``, pinned in
tests/data/upstream/endpoint_picker_path_b.json and below): each filter's default order, Lua and ext_proc by the
index their generated names end with (``mustGetFilterIndex``), then the EnvoyProxy's ``filterOrder`` moving every
filter whose name starts with an entry's name before the first filter of its ``before`` type. The local Envoy's
chain is read from its bootstrap. Both must put the Lua scripts (credential check, affinity key or the picker's
header strip, metering) before authentication, authentication before the limits, and the limits before the picker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.components.edge.token_metering import metering_lua
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET
from tests.components.edge.test_gateway_api import bootstrap

FACTS = json.loads((Path(__file__).parents[2] / "data" / "upstream" / "endpoint_picker_path_b.json").read_text())
EG_ORDER = FACTS["envoyproxy/gateway@v1.9.0"]["internal/xds/translator/httpfilters.go"]
LUA, EXT_PROC, API_KEY_AUTH = "envoy.filters.http.lua", picker.EXT_PROC_FILTER, "envoy.filters.http.api_key_auth"
BUFFER, RATE_LIMIT, ROUTER = "envoy.filters.http.buffer", "envoy.filters.http.ratelimit", "envoy.filters.http.router"
CUSTOM_RESPONSE = "envoy.filters.http.custom_response"
# httpfilters.go v1.9.0 newOrderedHTTPFilter: the fixed orders of the other filters the edge uses.
DEFAULT_ORDER = {CUSTOM_RESPONSE: 0, API_KEY_AUTH: 7, BUFFER: 12, RATE_LIMIT: EG_ORDER["ratelimit"], ROUTER: 310}
LUA_BASE, EXT_PROC_BASE = (int(EG_ORDER[k].split(" ")[0]) for k in ("Lua", "ext_proc"))
CLIENTS = {"auth": {"clients": {"a": {"tier": "t"}}}, "rateLimits": {"tiers": {"t": {"requestsPerMinute": 60}}}}


def _policy(mode: str):
    edge = {"routing": {"mode": mode}, **CLIENTS}
    settings = load_settings({"tags": {"owner": "t", "costCenter": "c"}, "edge": edge}, project="p", stack="s",
                             region="us-west-2")  # fmt: skip
    return settings.edge.policy()


def _order(name: str) -> int:
    kind = name.split("/")[0]
    if kind in (LUA, EXT_PROC):
        return (LUA_BASE if kind == LUA else EXT_PROC_BASE) + int(name.rsplit("/", 1)[1])
    return DEFAULT_ORDER[kind]


def cluster_chain(objects: list[dict[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """The HTTP filters Envoy Gateway v1.9.0 runs on the OpenAI route, in order, and each Lua filter's script."""
    (extension,) = [o for o in objects if o["metadata"]["name"] == f"{TARGET.name}-credentials"]
    namespace, name = extension["metadata"]["namespace"], extension["metadata"]["name"]
    scripts = {
        f"{LUA}/envoyextensionpolicy/{namespace}/{name}/lua/{i}": entry["inline"]
        for i, entry in enumerate(extension["spec"].get("lua", []))
    }
    names = [*scripts]
    names += [
        picker.ext_proc_filter_name(namespace, name, i) for i, _ in enumerate(extension["spec"].get("extProc", []))
    ]
    traffic = [o["spec"] for o in objects if o["kind"] == "BackendTrafficPolicy"]
    if any(o["kind"] == "SecurityPolicy" and "apiKeyAuth" in o["spec"] for o in objects):
        names.append(API_KEY_AUTH)
    if any("requestBuffer" in spec for spec in traffic):
        names.append(BUFFER)
    if any(spec.get("rateLimit", {}).get("global") for spec in traffic):
        names.append(RATE_LIMIT)
    if any("responseOverride" in spec for spec in traffic):
        names.append(CUSTOM_RESPONSE)
    names = sorted([*names, ROUTER], key=_order)
    (proxy,) = [o["spec"] for o in objects if o["kind"] == "EnvoyProxy"]
    for position in proxy.get("filterOrder", []):  # sortHTTPFilters: every filter of the type, before the first
        moved = [n for n in names if n.startswith(position["name"])]
        rest = [n for n in names if n not in moved]
        at = next(i for i, n in enumerate(rest) if n.startswith(position["before"]))
        names = rest[:at] + moved + rest[at:]
    return names, scripts


def local_chain(pol) -> tuple[list[str], dict[str, str]]:
    hcm = bootstrap(pol)["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    names = [f["name"] for f in hcm["http_filters"]]
    scripts = {
        f["name"]: f["typed_config"]["default_source_code"]["inline_string"]
        for f in hcm["http_filters"]
        if f["name"].startswith(LUA)
    }
    return names, scripts


def _kinds(names: list[str], scripts: dict[str, str], pol) -> list[str]:
    """Filter types, each Lua named by what its script is."""
    role = {pol.credential_lua: "lua:credentials", pol.rate_limit_reply_lua: "lua:429", metering_lua(): "lua:metering"}
    if pol.affinity_lua is not None:
        role[pol.affinity_lua] = "lua:affinity"
    if pol.routing.mode == "inference-pool":
        role[picker.strip_destination_lua()] = "lua:strip-destination"
    return [role[scripts[n]] if n in scripts else n.split("/")[0] for n in names]


@pytest.mark.parametrize(
    ("mode", "middle"),
    [
        ("envoy", ["lua:affinity", "lua:429"]),
        ("round-robin", ["lua:429"]),
        ("inference-pool", ["lua:429", "lua:strip-destination"]),
    ],
)
def test_both_renderings_run_the_lua_then_auth_then_the_limits_then_the_picker(mode: str, middle: list[str]) -> None:
    pol = _policy(mode)
    assert pol.metered and pol.auth_enabled
    cluster = _kinds(*cluster_chain(render_gateway_objects(pol, TARGET)), pol)
    lua = ["lua:credentials", *middle, "lua:metering"]
    picked = [EXT_PROC] if mode == "inference-pool" else []
    assert cluster == [CUSTOM_RESPONSE, *lua, API_KEY_AUTH, BUFFER, RATE_LIMIT, *picked, ROUTER]
    # The local Envoy: the response overrides first as the cluster's, the same Lua in the same order before
    # authentication; the request limits run as local_ratelimit beside the token limits' global one; no picker (it
    # cannot run here).
    local = _kinds(*local_chain(pol), pol)
    assert local == [CUSTOM_RESPONSE, *lua, API_KEY_AUTH, BUFFER, "envoy.filters.http.local_ratelimit", RATE_LIMIT,
                     ROUTER]  # fmt: skip


def test_without_the_rate_limit_entry_the_picker_would_schedule_refused_requests() -> None:
    pol = _policy("inference-pool")
    objects = render_gateway_objects(pol, TARGET)
    (proxy,) = [o for o in objects if o["kind"] == "EnvoyProxy"]
    proxy["spec"]["filterOrder"] = [p for p in proxy["spec"]["filterOrder"] if p["name"] != RATE_LIMIT]
    kinds = _kinds(*cluster_chain(objects), pol)
    assert kinds.index(EXT_PROC) < kinds.index(RATE_LIMIT)
