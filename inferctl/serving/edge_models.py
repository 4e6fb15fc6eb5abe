"""STAND-IN for Envoy Gateway's translation of model routing (components/edge/model_routing.py) on the local Envoy.

Takes the bootstrap ``edge_envoy.render_bootstrap`` wrote for the edge policy and adds what Envoy Gateway v1.9.0
programs for the model rules, as its translator builds them (files at the tag cited in the component's docstring):

- the routing script as one more Lua filter where the cluster's OpenAI-route policy has it
  (``model_routing.routing_index``: after the edge's own Lua, before the metering script; all before api_key_auth,
  as the EnvoyProxy's ``filterOrder`` moves every Lua filter), off on the other route groups' routes (the cluster's
  policy targets the OpenAI route alone);
- per model, routes matching ``x-inference-model`` (and the tester header the script sets for the canary's drawn
  share) on the generation paths, put before the allow-list's own routes; a rule with a fallback is ONE cluster
  whose backendRef is a locality at priority 0 and the fallback a locality at priority 1 (``cluster.go``
  ``buildWeightedLocalities``, ``LocalityWeightedLbConfig``);
- the route's retry gets ``previous_priorities`` with ``update_frequency`` 2 (``route.go``, from
  ``numAttemptsPerPriority``) and Envoy Gateway's ``previous_hosts`` predicate;
- ``GET /v1/models`` and ``/v1/models/<id>`` answered by the edge (``directResponse``).

Locally each rollout is one server (``address:port``); in the cluster a Service's endpoints.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from inference_platform.catalog.edge_policy import INFERENCE_ROUTES, LUA_FILTER, RETRY_ON, EdgePolicy
from inference_platform.catalog.serving_contract import OPENAI_MODELS_PATH
from inference_platform.components.edge.model_routing import (
    GENERATION_PATHS,
    MODEL_HEADER,
    NUM_ATTEMPTS_PER_PRIORITY,
    TESTER_VALUE,
    ModelBackend,
    ModelRoute,
    ModelRouting,
    routing_index,
)
from inference_platform.inferctl.serving.edge_envoy import Upstream

_TYPES = "type.googleapis.com/envoy."
LUA_NAME = "envoy.filters.http.lua.models"


def with_model_routing(
    bootstrap: Mapping[str, Any],
    routing: ModelRouting,
    policy: EdgePolicy,
    upstreams: Mapping[ModelBackend, Upstream],
) -> dict[str, Any]:
    """``bootstrap`` with model routing; ``upstreams`` says where each rollout's server listens."""
    out = copy.deepcopy(dict(bootstrap))
    static = out["static_resources"]
    hcm = static["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    filters = hcm["http_filters"]
    lua = {
        "name": LUA_NAME,
        "typed_config": {
            "@type": f"{_TYPES}extensions.filters.http.lua.v3.Lua",
            "default_source_code": {"inline_string": routing.lua},
        },
    }
    # Where the cluster's rendering puts it in the OpenAI route's policy (model_routing.routing_index): after the
    # edge's own Lua, before the metering script.
    lua_at = [i for i, f in enumerate(filters) if f["name"].startswith(LUA_FILTER)]
    scripts = [filters[i]["typed_config"]["default_source_code"]["inline_string"] for i in lua_at]
    at = routing_index(scripts)
    filters.insert(lua_at[at] if at < len(lua_at) else (lua_at[-1] + 1 if lua_at else 0), lua)
    host = hcm["route_config"]["virtual_hosts"][0]
    for route in host["routes"]:
        if route.get("route", {}).get("cluster") != INFERENCE_ROUTES:
            # The cluster's policy targets the OpenAI route alone: the batch lane's uploads are never parsed.
            route.setdefault("typed_per_filter_config", {})[LUA_NAME] = {
                "@type": f"{_TYPES}extensions.filters.http.lua.v3.LuaPerRoute",
                "disabled": True,
            }
    template = next(r for r in host["routes"] if r["route"]["cluster"] == "inference")
    routes = [_direct("GET", OPENAI_MODELS_PATH, routing.list_body())]
    routes += [_direct("GET", f"{OPENAI_MODELS_PATH}/{i}", routing.card_body(i)) for i in routing.public_ids]
    for model in routing.models:
        for tester, cluster in _clusters(routing, model, upstreams, static["clusters"][0]):
            static["clusters"].append(cluster)
            for path in GENERATION_PATHS:
                routes.append(_model_route(template, path, model.name, routing.tester_header, tester, cluster["name"],
                                           policy))  # fmt: skip
    host["routes"] = [*routes, *host["routes"]]
    return out


def _clusters(
    routing: ModelRouting,
    model: ModelRoute,
    upstreams: Mapping[ModelBackend, Upstream],
    template: Mapping[str, Any],
) -> list[tuple[str | None, dict[str, Any]]]:
    """(tester header value or None, cluster) per rule of ``model`` (``model_routing._model_rules``): the canary
    then the current version for the tester header ``always`` (the script's draw, or a tester); the current version
    then the model's fallback for everything else."""
    out: list[tuple[str | None, dict[str, Any]]] = [
        (None, _cluster(f"model-{model.name}", model.current, routing.model_fallback(model), upstreams, template))
    ]
    if model.canary is not None:
        canary = _cluster(f"model-{model.name}-canary", model.canary, model.current, upstreams, template)
        out.insert(0, (TESTER_VALUE, canary))
    return out


def _cluster(
    name: str,
    primary: ModelBackend,
    fallback: ModelBackend | None,
    upstreams: Mapping[ModelBackend, Upstream],
    template: Mapping[str, Any],
) -> dict[str, Any]:
    cluster = copy.deepcopy(dict(template))
    localities = [_locality(upstreams[primary], 0)]
    if fallback is not None:
        localities.append(_locality(upstreams[fallback], 1))
    cluster["name"] = name
    cluster["load_assignment"] = {"cluster_name": name, "endpoints": localities}
    # The template's balancer (the stack's edge.routing.mode) as Envoy Gateway renders it. Envoy Gateway adds
    # LocalityWeightedLbConfig to the round-robin and least-request ones (cluster.go); with one locality per
    # priority, as here, it changes no pick, so it is left out.
    return cluster


def _locality(upstream: Upstream, priority: int) -> dict[str, Any]:
    address = {"socket_address": {"address": upstream.address, "port_value": upstream.port}}
    return {
        "locality": {"zone": f"{upstream.address}:{upstream.port}"},
        "load_balancing_weight": 1,
        "priority": priority,
        "lb_endpoints": [{"endpoint": {"address": address}}],
    }


def _model_route(
    template: Mapping[str, Any],
    path: str,
    model: str,
    tester_header: str,
    tester: str | None,
    cluster: str,
    policy: EdgePolicy,
) -> dict[str, Any]:
    headers = [
        {"name": ":method", "string_match": {"exact": "POST"}},
        {"name": MODEL_HEADER, "string_match": {"exact": model}},
    ]
    if tester is not None:
        headers.append({"name": tester_header, "string_match": {"exact": tester}})
    route = copy.deepcopy(dict(template))
    route["match"] = {"path": path, "headers": headers}
    route["route"] = {**route["route"], "cluster": cluster}
    route["route"]["retry_policy"] = {
        "retry_on": ",".join(RETRY_ON),
        "num_retries": policy.retries,
        "retry_priority": {
            "name": "envoy.retry_priorities.previous_priorities",
            "typed_config": {
                "@type": f"{_TYPES}extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig",
                "update_frequency": NUM_ATTEMPTS_PER_PRIORITY,
            },
        },
        "retry_host_predicate": [
            {
                "name": "envoy.retry_host_predicates.previous_hosts",
                "typed_config": {"@type": f"{_TYPES}extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"},
            }
        ],
        "host_selection_retry_max_attempts": 5,
    }
    return route


def _direct(method: str, path: str, body: str) -> dict[str, Any]:
    return {
        "match": {"path": path, "headers": [{"name": ":method", "string_match": {"exact": method}}]},
        "direct_response": {"status": 200, "body": {"inline_string": body}},
        "response_headers_to_add": [
            {
                "header": {"key": "content-type", "value": "application/json"},
                "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
            }
        ],
    }
