"""llm-d's endpoint picker (EPP) behind the edge, ``edge.routing: inference-pool`` (issue 29, Path B: no extra
control plane): pinned versions and the objects that wire it, as plain data.

The picker is llm-d-router v0.10.0's EPP, installed from its ``llm-d-router-standalone`` chart without an
InferencePool (``router.inferencePool.create: false``: the EPP finds the serving pods itself with
``--endpoint-selector``/``--endpoint-target-ports``, rendered from ``router.modelServers``) and without the chart's
own proxy (``router.proxy.enabled: false``): the edge's Envoy Gateway is the proxy. Three Envoy Gateway v1.9.0
objects wire it in:

- the edge's one EnvoyExtensionPolicy gains an ``extProc`` to the EPP's Service (``ext_proc``), request headers and
  body ``Streamed``, ``failOpen: true``, ``messageTimeout`` raised from the 200 ms default;
- an EnvoyPatchPolicy sets the generated ext_proc filter's ``send_body_without_waiting_for_header_response``, which
  v1.9.0's API does not expose;
- the inference route's BackendTrafficPolicy ``loadBalancer``: ``LeastRequest`` with ``endpointOverride`` reading
  the EPP's ``x-gateway-destination-endpoint``: without a usable pick, least request.

Why this mode and not the EPP's own ``FullDuplexStreamed`` nor ``Buffered`` (each shown on the real local Envoy,
tests/components/edge/test_endpoint_picker_envoy.py, with a stand-in that answers as the EPP does):

- the EPP answers a request's headers only after its whole body (llm-d-router v0.10.0
  ``pkg/epp/handlers/request.go`` ``HandleRequestHeaders`` returns nothing while a body follows;
  ``pkg/epp/handlers/server.go`` sends the header response, with the pick, at the body's end of stream);
- in ``Buffered`` (and plain ``Streamed``) Envoy sends the body only after the header response, so each request
  waits the whole ``messageTimeout`` and goes on with no pick;
- in ``FullDuplexStreamed`` the pick works, but Envoy Gateway refuses ``failOpen`` with it (CEL on ``ExtProc``,
  ``api/v1alpha1/ext_proc_types.go``: "If FullDuplexStreamed body processing mode is used, FailOpen must be
  false"), and Envoy itself answers 500 when the processor is unreachable even with ``failure_mode_allow``;
- ``Streamed`` with the body sent without waiting for the header response: the pick works, and with the picker
  down every request still reaches a replica (fail-open), its body intact.

Several rollouts (a second model, a canary; issue 32): one picker still, with a scheduling profile per rollout
(``profiled``), chosen per request by ``PROFILE_HEADER``, which the edge's model routing script writes; it then selects
every serving pod of the stack (``SERVER_POD_LABELS``) and runs with ``--allow-experimental-plugins``, the profile
handler being Alpha at v0.10.0.

The EPP answers the body with ``StreamedBodyResponse`` chunks (``pkg/common/envoy/chunking.go``), a mutation
Envoy applies only in full-duplex mode; in ``Streamed`` mode the body passes unchanged, which is what the edge
wants (the EPP does not rewrite the body unless a model rewrite is configured, and none is).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inference_platform.catalog.charts import Chart
from inference_platform.catalog.serving_contract import SERVER_COMPONENT

PINNED_VERSION: Final = "v0.10.0"
CHART: Final = Chart("oci://ghcr.io/llm-d/charts/llm-d-router-standalone", PINNED_VERSION)
"""Published at the release's version (llm-d-router v0.10.0 ``hack/push-chart.sh``: ``helm package --version
${EXTRA_TAG}``, pushed to ``oci://${IMAGE_REGISTRY}/charts``; ``.github/ISSUE_TEMPLATE/new-release.md``)."""
IMAGE_REGISTRY: Final = "ghcr.io/llm-d"
IMAGE_REPOSITORY: Final = "llm-d-router-endpoint-picker"
IMAGE_TAG: Final = PINNED_VERSION
"""Never the chart's default ``main`` (``config/charts/routerlib/values.yaml``, ``pullPolicy: Always``)."""
RELEASE: Final = "inference-router"
"""The Helm release; the chart names the EPP's Deployment, Service and ServiceAccount ``<release>-epp``
(``routerlib/templates/_helpers.tpl`` ``llm-d-router.name``)."""
EXT_PROC_PORT: Final = 9002
HEALTH_PORT: Final = 9003
METRICS_PORT: Final = 9090
"""The EPP container's ports (``routerlib/templates/_deployment.yaml``: grpc 9002, grpc-health 9003 default,
metrics 9090)."""
METRICS_PORT_NAME: Final = "http-metrics"
"""The EPP Service's metrics port (``routerlib/templates/_service.yaml``), which the stack's own ServiceMonitor
scrapes; the Service carries ``app.kubernetes.io/name: <release>-epp`` (``_helpers.tpl`` ``llm-d-router.labels``)."""
SCHEDULER_ATTEMPTS: Final = "llm_d_epp_scheduler_attempts_total"
"""``status`` is ``success`` or ``failure`` (a pick that found no endpoint)."""
DATALAYER_POLL_ERRORS: Final = "llm_d_epp_datalayer_poll_errors_total"
"""A serving pod's ``/metrics`` could not be read (``pkg/epp/datalayer/collector.go``)."""
DATALAYER_EXTRACT_ERRORS: Final = "llm_d_epp_datalayer_extract_errors_total"
"""A page was read but a family the engine type names was missing (``extractor/metrics/extractor.go`` returns an
error per missing spec; ``source/http/datasource.go`` counts it): the queue and KV scorers see stale or no values."""
REQUEST_PROCESSING: Final = "llm_d_epp_request_processing_duration_seconds"
"""From a request's receipt until its body is handled, the pick included: the time the gateway's ext_proc waits,
bounded by ``MESSAGE_TIMEOUT`` before it fails open."""
DESTINATION_HEADER: Final = "x-gateway-destination-endpoint"
"""The EPP's pick, ``ip:port`` (``pkg/epp/metadata/consts.go`` ``DestinationEndpointKey``; request.go
``generateHeaders``); a client-sent one is removed at the edge before ext_proc runs."""
ENGINE_TYPE: Final = "triton-tensorrt-llm"
"""The metric names the EPP reads (``pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go``);
never ``triton``, whose passthrough parser turns prefix scoring off."""
DEFAULT_PLUGINS_FILE: Final = "default-plugins.yaml"
"""The chart's own EPP configuration (``routerlib/templates/_config.yaml``), rendered from ``modelServers.type``."""
NEURON_ENGINE: Final = "triton-neuron-llm"
"""Our name for the Neuron replicas' engine in the EPP's ``core-metrics-extractor``: none of v0.10.0's built-in
engines (``factories.go`` ``defaultEngineConfigs``: vllm, sglang, trtllm-serve, triton-tensorrt-llm, triton) reads
the gauges the ``neuron_llm`` step publishes (inference_image/runtime/request_gauges.py), so it is declared in
``engineConfigs`` (extractor README "Custom Engine Configuration") and made the ``defaultEngine``."""
NEURON_PLUGINS_FILE: Final = "neuron-plugins.yaml"
"""The Neuron stacks' EPP configuration, added to the chart's ConfigMap (``router.epp.pluginsCustomConfig``) and
selected with ``router.epp.pluginsConfigFile`` (``_deployment.yaml``: ``--config-file /config/<file>``)."""
NEURON_QUEUE_SPEC: Final = "neuron_llm_request_metrics{request_type=waiting}"
NEURON_RUNNING_SPEC: Final = "neuron_llm_request_metrics{request_type=active}"
"""``spec.go`` syntax: a family and a label subset, values quoted or not."""
PROFILE_HEADER: Final = "x-inference-profile"
"""With several rollouts (models, a canary), the scheduling profile the picker runs for a request: written by the
edge's model routing script (``components.edge.model_routing``) from the body's ``model`` and the canary draw,
removed from what a client sends, read by llm-d-router v0.10.0's ``header-profile-handler``."""
PER_MODEL_PLUGINS_FILE: Final = "per-model-plugins.yaml"
"""The configuration of a picker serving several rollouts (``profiled``), carried like the Neuron file."""
PROFILE_HANDLER: Final = "header-profile-handler"
ROLLOUT_FILTER: Final = "label-selector-filter"
ALPHA_PLUGINS: Final = frozenset({PROFILE_HANDLER})
"""The plugin types we configure that v0.10.0 registers at Alpha stability (``cmd/epp/runner/runner.go``
``registerInTreePlugins``): the picker refuses to start with one unless ``--allow-experimental-plugins`` is set
("has Alpha stability level, but command line flag --allow-experimental-plugins is not set",
``cmd/epp/runner/run_with_file_discovery_test.go``). ``label-selector-filter`` and every scorer are Beta."""
EXPERIMENTAL_FLAG: Final = "allow-experimental-plugins"
SERVER_POD_LABELS: Final = {
    "app.kubernetes.io/part-of": "inference-platform",
    "app.kubernetes.io/component": SERVER_COMPONENT,
}
"""Every serving pod of the stack, whatever its model or version, and nothing else: the leader of a multi-node
replica (its workers are ``inference-worker``), never a standby placeholder (``components.autoscaling.standby``)
nor a verification or load-test pod (``components.serving.inference_service``)."""
MESSAGE_TIMEOUT_S: Final = 5
MESSAGE_TIMEOUT: Final = f"{MESSAGE_TIMEOUT_S}s"
"""Envoy Gateway's default is 200 ms (``ext_proc_types.go``); the EPP schedules in milliseconds but scrapes and
scores under load, and a slow pick must not fail open needlessly. No flow control queue is enabled, so no
request waits in the EPP for longer."""
BODY_MODE: Final = "Streamed"
REPLICAS: Final = 2
"""Two: the chart then turns on leader election (active-passive, ``--ha-enable-leader-election``), and the
PodDisruptionBudget keeps one through a node drain."""
NO_WAIT_FIELD: Final = "send_body_without_waiting_for_header_response"
LISTENER_TYPE: Final = "type.googleapis.com/envoy.config.listener.v3.Listener"
EXT_PROC_FILTER: Final = "envoy.filters.http.ext_proc"


def service_name(release: str = RELEASE) -> str:
    return f"{release}-epp"


def pod_labels(release: str = RELEASE) -> dict[str, str]:
    """The EPP pods' selector labels in standalone mode (``_helpers.tpl`` ``llm-d-router.selectorLabels``)."""
    return {"llm-d-router-standalone": service_name(release)}


def neuron_plugins() -> dict[str, Any]:
    """The EPP configuration for Neuron replicas: the chart's defaults (``_config.yaml`` ``default-plugins.yaml``)
    with what a Neuron replica can tell: its queue and its running batch, read from the ``neuron_llm`` step's gauges
    (the OpenAI server relays them on the serving port, the only one the EPP scrapes). The KV-cache and prefix-cache
    scorers are left out, not fed zeros: the step runs static batches with no paged KV cache and no prefix reuse
    (``components.observability.promql.Scope``), so neither has anything true to score. ``running-requests-size-scorer``
    (scorer/runningrequests README) stands in for the KV scorer's job: a replica whose batch is full is busier."""
    return {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "queue-scorer"},
            {"type": "running-requests-size-scorer"},
            {"type": "metrics-data-source", "parameters": {"scheme": "http", "path": "/metrics"}},
            {
                "type": "core-metrics-extractor",
                "parameters": {
                    "defaultEngine": NEURON_ENGINE,
                    "engineConfigs": [
                        {
                            "name": NEURON_ENGINE,
                            "queuedRequestsSpec": NEURON_QUEUE_SPEC,
                            "runningRequestsSpec": NEURON_RUNNING_SPEC,
                        }
                    ],
                },
            },
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "running-requests-size-scorer", "weight": 1},
                ],
            }
        ],
    }


def tensorrt_llm_plugins() -> dict[str, Any]:
    """The chart's own ``default-plugins.yaml`` for ``modelServers.type: triton-tensorrt-llm`` over http, as
    ``routerlib/templates/_config.yaml`` renders it at v0.10.0 (no latency predictor, no parser): the queue,
    KV-cache and prefix-cache scorers weighted 2, 2 and 3, the metrics page at ``/metrics``. Written out here only
    where a stack needs it as the base of its own file (``profiled``); otherwise the chart's file is used."""
    return {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {"type": "prefix-cache-scorer"},
            {
                "type": "metrics-data-source",
                "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
            },
            {"type": "core-metrics-extractor", "parameters": {"defaultEngine": ENGINE_TYPE}},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                    {"pluginRef": "prefix-cache-scorer", "weight": 3},
                ],
            }
        ],
    }


@dataclass(frozen=True)
class RolloutProfile:
    """One rollout's scheduling profile: its name (the value of ``PROFILE_HEADER`` that selects it) and the labels
    of its pods, which the profile's filter keeps."""

    name: str
    pod_labels: Mapping[str, str]


def profiled(base: Mapping[str, Any], profiles: Sequence[RolloutProfile], default: str) -> dict[str, Any]:
    """``base`` (one profile) as one profile per rollout: each keeps only its rollout's pods (a
    ``label-selector-filter``, Beta), then scores and picks as ``base``'s profile does; ``header-profile-handler``
    (Alpha) runs the profile ``PROFILE_HEADER`` names, ``default`` when a request carries none. One picker, one
    datastore and one prefix index for every rollout (the index seeds each hash with the request's model,
    ``prefixhash/hashing.go``, so models never share an entry). The loader adds its max-score picker to each
    profile that has none (``pkg/epp/config/loader/defaults.go`` ``ensureSchedulingLayer``)."""
    names = [p.name for p in profiles]
    if len(set(names)) != len(names) or default not in names:
        raise ValueError(f"profiles must be distinct and include the default {default!r}, got {names}")
    (scoring,) = base["schedulingProfiles"]
    filters = [
        {"name": f"{p.name}-pods", "type": ROLLOUT_FILTER, "parameters": {"matchLabels": dict(p.pod_labels)}}
        for p in profiles
    ]
    handler = {"type": PROFILE_HANDLER, "parameters": {"headerName": PROFILE_HEADER, "defaultProfile": default}}
    return {
        **base,
        "plugins": [*base["plugins"], *filters, handler],
        "schedulingProfiles": [
            # Copies, so the YAML carries each profile whole (no anchors and aliases).
            {"name": p.name, "plugins": [{"pluginRef": f["name"]}, *(dict(ref) for ref in scoring["plugins"])]}
            for p, f in zip(profiles, filters, strict=True)
        ],
    }


def chart_values(
    *,
    serving_labels: Mapping[str, str],
    serving_port: int,
    system_affinity: Mapping[str, Any],
    tolerations: list[dict[str, Any]],
    replicas: int = REPLICAS,
    neuron: bool = False,
    profiles: Sequence[RolloutProfile] = (),
    default_profile: str = "",
) -> dict[str, Any]:
    """The release's values: the serving pods (``modelServers``), the pinned image, no InferencePool, no proxy,
    plaintext gRPC to the edge (``secure-serving: false``: the NetworkPolicy admits only the edge's proxies), on
    the system nodes. ``neuron``: the replicas are Neuron's, scored by ``neuron_plugins``. ``profiles`` (more than
    one: several models or a canary): one scheduling profile per rollout (``profiled``), ``default_profile`` for a
    request that names none; ``serving_labels`` must then select every rollout's pods."""
    if not serving_labels:
        raise ValueError("serving_labels: required (the chart refuses an empty selector in standalone mode)")
    import yaml

    base = neuron_plugins() if neuron else tensorrt_llm_plugins()
    flags: dict[str, Any] = {"secure-serving": False}
    config: dict[str, Any] = {}
    if len(profiles) > 1:
        per_rollout = profiled(base, profiles, default_profile)
        config = {
            "pluginsConfigFile": PER_MODEL_PLUGINS_FILE,
            "pluginsCustomConfig": {PER_MODEL_PLUGINS_FILE: yaml.safe_dump(per_rollout, sort_keys=False)},
        }
        flags[EXPERIMENTAL_FLAG] = True
    elif neuron:
        config = {
            "pluginsConfigFile": NEURON_PLUGINS_FILE,
            "pluginsCustomConfig": {NEURON_PLUGINS_FILE: yaml.safe_dump(base, sort_keys=False)},
        }
    return {
        "router": {
            "modelServers": {
                "type": ENGINE_TYPE,
                "protocol": "http",
                "targetPorts": [{"number": serving_port}],
                "matchLabels": dict(serving_labels),
            },
            "inferencePool": {"create": False},
            "proxy": {"enabled": False},
            "epp": {
                "replicas": replicas,
                "image": {
                    "registry": IMAGE_REGISTRY,
                    "repository": IMAGE_REPOSITORY,
                    "tag": IMAGE_TAG,
                    "pullPolicy": "IfNotPresent",
                },
                "flags": flags,
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
                "affinity": dict(system_affinity),
                "tolerations": list(tolerations),
                **config,
            },
            # The chart's own ServiceMonitor stays off: with it come a ClusterRole (tokenreviews,
            # subjectaccessreviews) and a long-lived token of the picker's own ServiceAccount handed to
            # Prometheus (_rbac.yaml, _sa-token-secret.yaml, _servicemonitor.yaml). The stack scrapes the
            # picker with its own ServiceMonitor instead (infra/observability.py), and /metrics is served
            # without auth (_deployment.yaml renders --metrics-endpoint-auth=false): the NetworkPolicy
            # admits only the monitoring namespace to that port.
            "monitoring": {"prometheus": {"enabled": False, "auth": {"enabled": False}}},
        },
    }


def ext_proc(namespace: str, release: str = RELEASE) -> dict[str, Any]:
    """The EnvoyExtensionPolicy's ``extProc`` entry calling the EPP (request headers and body, fail-open)."""
    return {
        "backendRefs": [{"name": service_name(release), "namespace": namespace, "port": EXT_PROC_PORT}],
        "messageTimeout": MESSAGE_TIMEOUT,
        "failOpen": True,
        "processingMode": {"request": {"body": BODY_MODE}},
    }


def ext_proc_filter_name(namespace: str, policy: str, index: int = 0) -> str:
    """The HTTP filter Envoy Gateway v1.9.0 generates for extProc ``index`` of EnvoyExtensionPolicy
    ``namespace/policy``: ``perRouteFilterName`` (internal/xds/translator/utils.go) of ``irConfigNameForExtProc``
    (internal/gatewayapi/envoyextensionpolicy.go: ``<kind lower-case>/<namespace>/<name>/extproc/<index>``)."""
    return f"{EXT_PROC_FILTER}/envoyextensionpolicy/{namespace}/{policy}/extproc/{index}"


def listener_name(namespace: str, gateway: str, listener: str) -> str:
    """The xDS listener of a Gateway listener while ``XDSNameSchemeV2`` is off, v1.9.0's default
    (internal/gatewayapi/helpers.go ``irListenerName``, kept by internal/xds/translator/listener.go ``xdsListenerName``;
    api/v1alpha1/envoygateway_helpers.go)."""
    return f"{namespace}/{gateway}/{listener}"


def no_wait_patch(*, namespace: str, gateway: str, listener: str, policy: str) -> dict[str, Any]:
    """The EnvoyPatchPolicy spec setting ``send_body_without_waiting_for_header_response`` on the EPP's ext_proc
    filter (JSON patches address proto field names: internal/xds/translator/jsonpatch.go ``UseProtoNames``)."""
    filter_name = ext_proc_filter_name(namespace, policy)
    return {
        "targetRef": {"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": gateway},
        "type": "JSONPatch",
        "jsonPatches": [
            {
                "type": LISTENER_TYPE,
                "name": listener_name(namespace, gateway, listener),
                "operation": {
                    "op": "add",
                    "jsonPath": f"$..http_filters[?(@.name=='{filter_name}')].typed_config",
                    "path": f"/{NO_WAIT_FIELD}",
                    "value": True,
                },
            }
        ],
    }


def strip_destination_lua() -> str:
    """The edge's Lua removing any client-sent ``DESTINATION_HEADER`` (Lua runs before ext_proc: Envoy Gateway
    v1.9.0 httpfilters.go orders Lua at 13+i, ext_proc at 100+i): only the EPP picks a replica, and when it
    fails open no client does."""
    return (
        f"-- The endpoint picker's header is the picker's alone (issue 29): a client's {DESTINATION_HEADER} is "
        "dropped.\n"
        "function envoy_on_request(handle)\n"
        f'  handle:headers():remove("{DESTINATION_HEADER}")\n'
        "end\n"
    )
