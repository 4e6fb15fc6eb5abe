"""``edge.routing: inference-pool`` rendered for the cluster (issue 29, Path B), held to the upstream facts pinned in
tests/data/upstream/endpoint_picker_path_b.json (llm-d/llm-d-router@v0.10.0, envoyproxy/gateway@v1.9.0, each fact
with its file); catalog/endpoint_picker.py says why the picker is called as it is."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.catalog.envoy_gateway_gates import features_used
from inference_platform.components.batch.edge_routes import ROUTE_KEY, route_group
from inference_platform.components.edge.controller_config import controller_values
from inference_platform.components.edge.gateway_api import Backend, GatewayTarget, render_gateway_objects
from inference_platform.components.edge.token_metering import metering_lua
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET

FACTS = json.loads((Path(__file__).parents[2] / "data" / "upstream" / "endpoint_picker_path_b.json").read_text())
LLM_D = FACTS["llm-d/llm-d-router@v0.10.0"]
EG = FACTS["envoyproxy/gateway@v1.9.0"]
TAGS = {"owner": "t", "costCenter": "c"}


def _policy(mode: str = "inference-pool", **edge):
    settings = load_settings(
        {"tags": TAGS, "edge": {"routing": {"mode": mode}, **edge}}, project="p", stack="s", region="us-west-2"
    )
    return settings.edge.policy()


def _objects(mode: str = "inference-pool", target: GatewayTarget = TARGET, **edge):
    return render_gateway_objects(_policy(mode, **edge), target)


def _named(objects, name):
    (found,) = [o for o in objects if o["metadata"]["name"] == name]
    return found


def test_the_picker_is_pinned_to_the_release_never_main() -> None:
    assert picker.CHART.version == picker.PINNED_VERSION == "v0.10.0"
    assert picker.CHART.chart == LLM_D[".github/ISSUE_TEMPLATE/new-release.md"]["charts"][0].split(" ")[0]
    image = LLM_D[".github/ISSUE_TEMPLATE/new-release.md"]["image"].replace("${VERSION}", picker.IMAGE_TAG)
    assert f"{picker.IMAGE_REGISTRY}/{picker.IMAGE_REPOSITORY}:{picker.IMAGE_TAG}" == image
    defaults = LLM_D["config/charts/routerlib/values.yaml"]
    assert defaults["epp.image.tag"] == "main" != picker.IMAGE_TAG
    values = picker.chart_values(serving_labels={"app": "x"}, serving_port=9000, system_affinity={}, tolerations=[])
    epp = values["router"]["epp"]
    assert epp["image"]["tag"] == "v0.10.0" and epp["image"]["pullPolicy"] == "IfNotPresent"
    assert values["router"]["modelServers"]["type"] == picker.ENGINE_TYPE in defaults["modelServers.type"]
    assert picker.ENGINE_TYPE != "triton"  # passthrough parser: no prefix scoring
    # Standalone without an InferencePool or the chart's own proxy: the edge is the proxy.
    assert values["router"]["inferencePool"] == {"create": False} and values["router"]["proxy"] == {"enabled": False}
    assert values["router"]["modelServers"]["matchLabels"] == {"app": "x"}
    with pytest.raises(ValueError, match="serving_labels"):
        picker.chart_values(serving_labels={}, serving_port=9000, system_affinity={}, tolerations=[])
    assert epp["replicas"] >= 2  # leader election and a PodDisruptionBudget that keeps one
    ports = LLM_D["config/charts/routerlib/templates/_deployment.yaml"]["ports"]
    assert (
        ports["grpc"],
        ports["grpc-health"],
        ports["metrics"],
    ) == (picker.EXT_PROC_PORT, picker.HEALTH_PORT, picker.METRICS_PORT)
    assert picker.service_name() == f"{picker.RELEASE}-epp"
    assert picker.pod_labels() == {"llm-d-router-standalone": f"{picker.RELEASE}-epp"}


def test_the_ext_proc_is_fail_open_streamed_with_a_raised_timeout_on_the_inference_route_only() -> None:
    backends = (Backend(key=ROUTE_KEY, service="batch-api", namespace="batch", port=8000),)
    target = dataclasses.replace(TARGET, backends=backends)
    policy = dataclasses.replace(_policy(), extra_routes=(route_group(),))
    objects = render_gateway_objects(policy, target)
    extensions = [o for o in objects if o["kind"] == "EnvoyExtensionPolicy"]
    credentials = _named(objects, f"{TARGET.name}-credentials")
    assert extensions[-1] is credentials
    assert [r["name"] for r in credentials["spec"]["targetRefs"]] == [f"{TARGET.name}-http"]
    (ext_proc,) = credentials["spec"]["extProc"]
    assert ext_proc["failOpen"] is True
    assert ext_proc["processingMode"] == {"request": {"body": "Streamed"}}
    assert ext_proc["processingMode"]["request"]["body"] in EG["api/v1alpha1/ext_proc_types.go"]["body modes"]
    assert set(ext_proc) <= set(EG["api/v1alpha1/ext_proc_types.go"]["fields"])
    assert ext_proc["messageTimeout"] != EG["api/v1alpha1/ext_proc_types.go"]["messageTimeout default"]
    assert ext_proc["backendRefs"] == [
        {"name": picker.service_name(), "namespace": TARGET.service_namespace, "port": picker.EXT_PROC_PORT}
    ]
    # The other route groups keep the edge's Lua and never reach the picker nor the token metering (issue 30).
    other = _named(objects, f"{TARGET.name}-credentials-other-routes")
    assert "extProc" not in other["spec"]
    assert other["spec"]["lua"] + [{"type": "Inline", "inline": metering_lua()}] == credentials["spec"]["lua"]
    assert [r["name"] for r in other["spec"]["targetRefs"]] == [f"{TARGET.name}-{ROUTE_KEY}"]
    # The picker's Service is reachable from the gateway's namespace.
    grant = _named(objects, f"{TARGET.name}-endpoint-picker")
    assert grant["metadata"]["namespace"] == TARGET.service_namespace
    assert grant["spec"]["from"] == [
        {"group": "gateway.envoyproxy.io", "kind": "EnvoyExtensionPolicy", "namespace": TARGET.namespace}
    ]
    assert grant["spec"]["to"] == [{"group": "", "kind": "Service", "name": picker.service_name()}]


def test_a_client_cannot_pick_its_replica() -> None:
    policy = _policy()
    strip = picker.strip_destination_lua()
    assert policy.edge_lua[-1] == strip and f'remove("{picker.DESTINATION_HEADER}")' in strip
    assert picker.DESTINATION_HEADER == "x-gateway-destination-endpoint"
    assert strip not in _policy("envoy").edge_lua


def test_the_no_wait_patch_addresses_the_generated_filter() -> None:
    objects = _objects()
    patch = _named(objects, f"{TARGET.name}-picker-no-wait")["spec"]
    (json_patch,) = patch["jsonPatches"]
    assert json_patch["type"] in EG["api/v1alpha1/envoypatchpolicy_types.go"]["types"]
    assert json_patch["name"] == f"{TARGET.namespace}/{TARGET.name}/http"  # the Gateway's listener 'http'
    gateway = next(o for o in objects if o["kind"] == "Gateway")
    assert [listener["name"] for listener in gateway["spec"]["listeners"]] == ["http"]
    filter_name = (
        f"envoy.filters.http.ext_proc/envoyextensionpolicy/{TARGET.namespace}/{TARGET.name}-credentials/extproc/0"
    )
    assert picker.ext_proc_filter_name(TARGET.namespace, f"{TARGET.name}-credentials") == filter_name
    assert json_patch["operation"] == {
        "op": "add",
        "jsonPath": f"$..http_filters[?(@.name=='{filter_name}')].typed_config",
        "path": "/send_body_without_waiting_for_header_response",
        "value": True,
    }
    assert set(json_patch["operation"]) <= set(EG["api/v1alpha1/envoypatchpolicy_types.go"]["operation"])


def test_no_usable_pick_falls_back_to_least_request_and_the_rate_limit_runs_first() -> None:
    objects = _objects(auth={"clients": {"a": {"tier": "t"}}}, rateLimits={"tiers": {"t": {"requestsPerMinute": 60}}})
    body = _named(objects, f"{TARGET.name}-http-body")["spec"]
    assert body["loadBalancer"] == {
        "type": "LeastRequest",
        "endpointOverride": {"extractFrom": [{"header": picker.DESTINATION_HEADER}]},
    }
    proxy = next(o for o in objects if o["kind"] == "EnvoyProxy")["spec"]
    assert {"name": "envoy.filters.http.ratelimit", "before": "envoy.filters.http.ext_proc"} in proxy["filterOrder"]
    # Without that entry Envoy Gateway would run ext_proc first (its default order, httpfilters.go).
    order = EG["internal/xds/translator/httpfilters.go"]
    assert order["ext_proc"].startswith("100") and order["ratelimit"] == 303


def test_the_controller_enables_what_the_picker_objects_use() -> None:
    objects = _objects()
    found = features_used(objects)
    assert {"ext_proc", "EnvoyPatchPolicy", "Lua"} <= found
    values = controller_values("r:6379", features=features_used(objects))
    apis = values["config"]["envoyGateway"]["extensionApis"]
    assert apis.get("enableEnvoyPatchPolicy") is True and apis.get("enableLua") is True
    assert "enableBackend" not in apis  # the picker is a Service: no Backend, nothing more switched on


def test_other_modes_render_no_picker_objects() -> None:
    for mode in ("envoy", "round-robin"):
        objects = _objects(mode)
        names = {o["metadata"]["name"] for o in objects}
        assert f"{TARGET.name}-picker-no-wait" not in names and f"{TARGET.name}-endpoint-picker" not in names
        assert all("extProc" not in o["spec"] for o in objects if o["kind"] == "EnvoyExtensionPolicy")


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_the_shipped_picker_runs_on_system_nodes_beside_the_pods_it_picks(stack_plan, stack) -> None:
    """The prod and npu plans (inference-pool by default): the picker's release selects the very pods the gateway
    serves from, in their namespace, on the system nodes; its scrape policy opens their OpenAI port to it alone."""
    resources = stack_plan(stack).run.resources
    (release,) = [
        r for r in resources if r.type == "kubernetes:helm.sh/v3:Release" and r.name.endswith("picker-release")
    ]
    (gateway_policy,) = [
        r for r in resources if r.type == "kubernetes:networking.k8s.io/v1:NetworkPolicy" and r.name == "edge-gateway-inference-ingress"
    ]  # fmt: skip
    serving = gateway_policy.inputs["spec"]["podSelector"]["matchLabels"]
    router = release.inputs["values"]["router"]
    assert router["modelServers"]["matchLabels"] == serving
    assert release.inputs["namespace"] == gateway_policy.inputs["metadata"]["namespace"]
    terms = router["epp"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    (expression,) = terms["nodeSelectorTerms"][0]["matchExpressions"]
    assert expression["values"] == ["system"]
    (scrape,) = [r for r in resources if r.name == "edge-gateway-endpoint-picker-scrape"]
    (rule,) = scrape.inputs["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": picker.pod_labels()}}]
    assert [int(p["port"]) for p in rule["ports"]] == [int(router["modelServers"]["targetPorts"][0]["number"])]


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_the_batch_workers_go_straight_to_the_serving_service_not_through_the_picker(stack_plan, stack) -> None:
    """Issue 29 item 5, decided (docs/edge.md "The batch lane"): the workers call the serving Service's cluster
    address, so their lines pass neither the edge's limits nor the picker, whose prefix and load state then hold
    only interactive requests."""
    resources = stack_plan(stack).run.resources
    (worker,) = [r for r in resources if r.name == "batch-workloads-worker-deployment"]
    (container,) = worker.inputs["spec"]["template"]["spec"]["containers"]
    (url,) = [e["value"] for e in container["env"] if e["name"] == "BATCH_SERVING_URL"]
    (release,) = [r for r in resources if r.name == "edge-gateway-endpoint-picker-release"]
    services = [r for r in resources if r.type == "kubernetes:core/v1:Service"]
    (serving,) = [s for s in services if s.inputs["metadata"]["labels"].items() >= release.inputs["values"]["router"]["modelServers"]["matchLabels"].items()]  # fmt: skip
    port = int(release.inputs["values"]["router"]["modelServers"]["targetPorts"][0]["number"])
    meta = serving.inputs["metadata"]
    assert url == f"http://{meta['name']}.{meta['namespace']}.svc.cluster.local:{port}"
    assert picker.service_name() not in url and "envoy" not in url


def test_the_live_metrics_test_checks_exactly_what_the_picker_reads() -> None:
    """tests/inferctl/serving/test_serving_port_metrics.py reads these families off the live server's serving port;
    they are the picker's triton-tensorrt-llm engine config at v0.10.0 (factories.go), which the chart applies to our
    unlabeled pods as the default engine (_config.yaml: defaultEngine is modelServers.type)."""
    from tests.inferctl.serving.test_serving_port_metrics import EPP_SPECS

    read = LLM_D["pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go"][picker.ENGINE_TYPE]
    live = {f"{family}{{{','.join(f'{k}={v}' for k, v in labels.items())}}}" for family, labels in EPP_SPECS.values()}
    assert live == set(read)


@pytest.mark.parametrize(("stack", "expected"), [("prod", True), ("npu", True), ("dev", False)])
def test_the_picker_alert_is_planned_where_the_picker_is(stack_plan, stack, expected) -> None:
    resources = stack_plan(stack).run.resources
    rules = [r for r in resources if r.type == "kubernetes:monitoring.coreos.com/v1:PrometheusRule"]
    alerts = {rule.get("alert") for r in rules for g in r.inputs["spec"]["groups"] for rule in g["rules"]}
    assert ("EndpointPickerUnavailable" in alerts) is expected
    if expected:
        (expression,) = [
            rule["expr"] for r in rules for g in r.inputs["spec"]["groups"] for rule in g["rules"]
            if rule.get("alert") == "EndpointPickerUnavailable"
        ]  # fmt: skip
        assert f'pod=~"{picker.service_name()}-.*"' in expression
