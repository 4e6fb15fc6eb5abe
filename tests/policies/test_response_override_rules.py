"""edge-overrides-keep-retry-after (policies/rules/response_overrides.py): the Gateway objects the edge renders, as
CustomResources, and the same objects with what keeps Retry-After taken away."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pulumi_kubernetes as k8s

from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET

RULE = "edge-overrides-keep-retry-after"
TAGS = {"owner": "team", "costCenter": "cc-1"}


def _objects(edge: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    policy = load_settings({"tags": TAGS, "edge": edge or {}}, project="p", stack="s", region="us-west-2").edge.policy()
    return render_gateway_objects(policy, TARGET)


def _program(objects: list[dict[str, Any]]) -> Callable[[], None]:
    def program() -> None:
        for i, o in enumerate(objects):
            k8s.apiextensions.CustomResource(
                f"o{i}", api_version=o["apiVersion"], kind=o["kind"], metadata=o["metadata"], spec=o["spec"]
            )

    return program


def _override(objects: list[dict[str, Any]], status: int) -> dict[str, Any]:
    (backend,) = [o for o in objects if o["kind"] == "BackendTrafficPolicy" and "responseOverride" in o["spec"]]
    return next(o for o in backend["spec"]["responseOverride"] if o["match"]["statusCodes"][0]["value"] == status)


def test_the_edge_as_rendered_passes(violations):
    assert violations(_program(_objects()), RULE) == []
    unauthenticated = {
        "auth": {"enabled": False},
        "routing": {"mode": "round-robin"},
        "tokenLimits": {"tokensPerMinute": None},
    }
    assert violations(_program(_objects(unauthenticated)), RULE) == []


def test_a_429_override_that_sets_no_retry_after_is_refused(violations):
    # What the edge rendered before: the rate limiter's headers dropped, nothing put back.
    objects = _objects()
    del _override(objects, 429)["response"]["header"]
    (found,) = violations(_program(objects), RULE)
    assert "responseOverride[2] rewrites the proxy's 429" in found.message and "retry-after" in found.message


def test_a_range_covering_503_counts_and_a_backend_only_override_does_not(violations):
    objects = _objects()
    overload = _override(objects, 503)
    del overload["response"]["header"]
    del overload["match"]["responseHeaders"]
    overload["match"]["statusCodes"] = [{"type": "Range", "range": {"start": 500, "end": 599}}]
    (found,) = violations(_program(objects), RULE)
    assert "the proxy's 503" in found.message
    overload["source"] = "Backend"  # the server's own 503s keep their headers
    assert violations(_program(objects), RULE) == []


def test_metadata_no_script_writes_is_refused(violations):
    objects = copy.deepcopy(_objects())
    for o in objects:
        if o["kind"] == "EnvoyExtensionPolicy":
            o["spec"]["lua"] = [
                lua for lua in o["spec"].get("lua", []) if "io.inference.ratelimit" not in lua["inline"]
            ]
    (found,) = violations(_program(objects), RULE)
    assert "io.inference.ratelimit that no Lua" in found.message
