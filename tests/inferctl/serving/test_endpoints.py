"""The local edge's EDS mirrors Envoy Gateway v1.9.0's endpoint translation (tests/data/upstream/
envoy_gateway_v1.9.0_endpoint_draining.json, read from internal/gatewayapi/route.go and
internal/xds/translator/cluster.go at v1.9.0), and the local Envoy takes it: a scaled-down replica is held DRAINING,
then leaves (the live path is tests/inferctl/serving/test_scale_down.py)."""

from __future__ import annotations

import json
from pathlib import Path

from inference_platform.catalog.edge_policy import INFERENCE_ROUTES
from inference_platform.components.edge.controller_config import cluster_controller_config
from inference_platform.inferctl.serving.edge_envoy import Listener, Upstream, render_bootstrap
from inference_platform.inferctl.serving.edge_tls import local_certificates
from inference_platform.inferctl.serving.endpoints import (
    DRAINING,
    NOT_READY,
    POD_DELETED,
    READY,
    Conditions,
    LocalEndpoints,
    edge_host_statuses,
    gateway_draining,
    health_status,
    wait_for_edge,
)
from inference_platform.inferctl.serving.envoy_process import envoy_process
from inference_platform.inferctl.serving.local_edge import generate_keys
from inference_platform.settings import stack_files
from inference_platform.settings.derived import stack_edge_policy
from tests.inferctl.serving.conftest import LOOPBACK, free_port

REPO = Path(__file__).resolve().parents[3]
UPSTREAM = json.loads((REPO / "tests/data/upstream/envoy_gateway_v1.9.0_endpoint_draining.json").read_text())


def test_draining_follows_envoy_gateway_for_every_pinned_case():
    cases = UPSTREAM["endpoint_slice_to_draining"]["cases"]
    assert len(cases) >= 7
    for case in cases:
        conditions = Conditions(ready=case["ready"], serving=case["serving"], terminating=case["terminating"])
        assert gateway_draining(conditions) is case["draining"], case
        assert health_status(conditions) == UPSTREAM["health_status"]["draining" if case["draining"] else "otherwise"]


def test_the_kubernetes_states_the_rig_uses_are_the_pinned_ones():
    k8s = UPSTREAM["kubernetes_endpoint_conditions"]
    assert Conditions(**k8s["pod_deleted_readiness_passing"]) == POD_DELETED
    assert Conditions(**k8s["pod_readiness_failing"]) == NOT_READY
    assert (gateway_draining(READY), gateway_draining(POD_DELETED), gateway_draining(NOT_READY)) == (False, True, True)


def test_the_eds_file_keeps_a_leaving_endpoint_as_draining_until_it_is_removed(tmp_path):
    members = [(LOOPBACK, 9001), (LOOPBACK, 9002)]
    eds = LocalEndpoints(tmp_path / "eds.json", cluster=INFERENCE_ROUTES, members=members)
    eds.set(members[1], POD_DELETED)
    written = json.loads(eds.path.read_text())
    (assignment,) = written["resources"]
    statuses = [e["health_status"] for e in assignment["endpoints"][0]["lb_endpoints"]]
    assert (assignment["cluster_name"], statuses, written["version_info"]) == (
        INFERENCE_ROUTES,
        ["UNKNOWN", DRAINING],
        "2",
    )
    eds.remove(members[1])
    assert len(json.loads(eds.path.read_text())["resources"][0]["endpoints"][0]["lb_endpoints"]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eds.json"]  # no temporary file left


def test_the_local_envoy_holds_what_the_eds_file_says(tmp_path):
    """The bootstrap's EDS cluster (EG's ignore_health_on_host_removal), on the wheel's Envoy: statuses follow the
    file, the removed endpoint goes."""
    policy = stack_edge_policy(stack_files.load("dev"))
    members = [(LOOPBACK, free_port()), (LOOPBACK, free_port())]
    eds = LocalEndpoints(tmp_path / "eds" / "inference.json", cluster=INFERENCE_ROUTES, members=members)
    tls = local_certificates(tmp_path / "tls")
    admin = free_port()
    bootstrap = render_bootstrap(
        policy,
        keys=generate_keys(policy),
        listener=Listener(address=LOOPBACK, port=free_port(), certificate=tls.certificate,
                          private_key=tls.private_key, admin_port=admin, access_log=tmp_path / "access.log"),
        upstream=Upstream(address=LOOPBACK, port=members[0][1], eds_file=eds.path),
        controller=cluster_controller_config(policy),
    )  # fmt: skip
    (cluster,) = [c for c in bootstrap["static_resources"]["clusters"] if c["name"] == INFERENCE_ROUTES]
    assert (
        cluster["type"] == "EDS"
        and cluster["ignore_health_on_host_removal"] is UPSTREAM["cluster"]["ignore_health_on_host_removal"]
    )
    assert "load_assignment" not in cluster and bootstrap["node"]["cluster"]
    config = tmp_path / "envoy.json"
    config.write_text(json.dumps(bootstrap))
    admin_url = f"http://{LOOPBACK}:{admin}"
    with envoy_process(config, log=tmp_path / "envoy.log", admin_url=admin_url):
        held = edge_host_statuses(admin_url, INFERENCE_ROUTES)
        assert set(held) == set(members) and DRAINING not in held.values(), held
        eds.set(members[1], POD_DELETED)
        assert wait_for_edge(admin_url, INFERENCE_ROUTES, members[1], DRAINING, timeout=10) < 10
        assert edge_host_statuses(admin_url, INFERENCE_ROUTES)[members[0]] != DRAINING
        eds.remove(members[1])
        wait_for_edge(admin_url, INFERENCE_ROUTES, members[1], None, timeout=10)
        assert set(edge_host_statuses(admin_url, INFERENCE_ROUTES)) == {members[0]}
