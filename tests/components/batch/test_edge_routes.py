"""The Batch API at the edge: its route group rendered by the edge's own renderer goes to the lane's Service, is
covered by the same SecurityPolicy as the synchronous API, is not buffered, and reaches the lane's namespace
through a ReferenceGrant; the npu stack (on in production) plans it."""

from __future__ import annotations

import dataclasses

from inference_platform.catalog.edge_policy import EdgePolicy
from inference_platform.components.batch import edge_routes, pods
from inference_platform.components.edge.gateway_api import render_gateway_objects
from tests.components.edge.targets import TARGET


def _objects():
    policy = EdgePolicy(clients=(), extra_routes=(edge_routes.route_group(),))
    target = dataclasses.replace(TARGET, backends=(edge_routes.backend(),))
    return render_gateway_objects(policy, target)


def test_the_batch_routes_go_to_the_lanes_service_by_path_prefix():
    objects = _objects()
    route = next(o for o in objects if o["kind"] == "HTTPRoute" and o["metadata"]["name"] == "inference-edge-batch")
    backends = {(b["name"], b["namespace"], b["port"]) for r in route["spec"]["rules"] for b in r["backendRefs"]}
    assert backends == {(pods.API, "batch", pods.API_PORT)}
    matches = {
        (m["method"], m["path"]["type"], m["path"]["value"]) for r in route["spec"]["rules"] for m in r["matches"]
    }
    assert matches == {
        ("GET", "PathPrefix", "/v1/files"),
        ("POST", "PathPrefix", "/v1/files"),
        ("DELETE", "PathPrefix", "/v1/files"),
        ("GET", "PathPrefix", "/v1/batches"),
        ("POST", "PathPrefix", "/v1/batches"),
    }


def test_the_batch_routes_are_authenticated_like_the_sync_api_and_not_buffered():
    objects = _objects()
    (security,) = [o for o in objects if o["kind"] == "SecurityPolicy" and "apiKeyAuth" in o["spec"]]
    targets = {t["name"] for t in security["spec"]["targetRefs"]}
    assert {"inference-edge-http", "inference-edge-batch"} <= targets
    bodies = [
        o for o in objects if o["kind"] == "BackendTrafficPolicy" and o["metadata"]["name"].endswith("-batch-body")
    ]
    assert bodies == [], "an upload streams through; the API refuses a file beyond batch.maxFileBytes itself"
    grants = [o for o in objects if o["kind"] == "ReferenceGrant" and o["metadata"]["namespace"] == "batch"]
    assert len(grants) == 1


def test_the_npu_stack_plans_the_routes_under_the_edge_policies(stack_plan):
    plan = stack_plan("npu")
    names = {r.name for r in plan.run.resources}
    assert "edge-gateway-httproute-inference-edge-batch" in names
    assert not [v for v in plan.violations if "batch" in v.urn or "edge" in v.policy]
