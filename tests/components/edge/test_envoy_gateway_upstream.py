"""Upstream facts about Envoy Gateway that the edge depends on (issue 17 §1, §2), read at the pinned version and
written down here as data, each with the file it was read from.

Read from github.com/envoyproxy/gateway at tag v1.9.0 (``git show v1.9.0:<path>``); the chart
``oci://docker.io/envoyproxy/gateway-helm`` v1.9.0 is built from the same tag. Nothing of theirs is
copied: the generated rate-limit pod is modelled below only as far as the facts go (which volume mounts
and volumes exist under which settings), and our install values are checked against that model.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_platform.catalog.edge_charts import ENVOY_GATEWAY
from inference_platform.components.edge.gateway import REDIS_CERTS_VOLUME, controller_values
from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.components.observability import promql as q
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET

REPOSITORY = "envoyproxy/gateway"
TAG = "v1.9.0"

# internal/infrastructure/kubernetes/ratelimit/resource.go @ v1.9.0
RATELIMIT_RESOURCE = "internal/infrastructure/kubernetes/ratelimit/resource.go"
# expectedContainerVolumeMounts: "certs" (/certs) always; "redis-certs" (/redis-certs, read-only) whenever
# rateLimit.backend.redis.tls is set (TLS != nil).
ALWAYS_MOUNTED = ("certs",)
MOUNTED_WITH_TLS = "redis-certs"
# expectedDeploymentVolumes: "certs" (Secret envoy-rate-limit) always; "redis-certs" (a Secret volume of
# tls.certificateRef.name) ONLY when tls.certificateRef is set. Then both lists are amended by name with
# rateLimitDeployment.container.volumeMounts / rateLimitDeployment.pod.volumes
# (internal/infrastructure/kubernetes/resource/resource.go ExpectedVolumes / ExpectedContainerVolumeMounts).
ALWAYS_VOLUMES = ("certs",)
VOLUME_WITH_CERTIFICATE_REF = "redis-certs"
# expectedRateLimitContainerEnv: REDIS_TLS=true with tls; REDIS_TLS_CLIENT_CERT=/redis-certs/tls.crt and
# REDIS_TLS_CLIENT_KEY=/redis-certs/tls.key only with tls.certificateRef: the reference is a CLIENT
# certificate. api/v1alpha1/envoygateway_types.go RedisTLSSettings.CertificateRef: "the client certificate
# reference for TLS connections. Currently only a Kubernetes Secret of type TLS is supported."
ENV_WITH_TLS = {"REDIS_TLS": "true"}
ENV_WITH_CERTIFICATE_REF = {
    "REDIS_TLS_CLIENT_CERT": "/redis-certs/tls.crt",
    "REDIS_TLS_CLIENT_KEY": "/redis-certs/tls.key",
}
# api/v1alpha1/shared_types.go KubernetesPodSpec.Volumes (json "volumes", merge by name) and
# api/v1alpha1/envoygateway_types.go EnvoyGatewayKubernetesInfrastructureConfiguration.RateLimitDeployment
# (json "rateLimitDeployment", a KubernetesDeploymentSpec: patch, replicas, pod, container, ...).
POD_VOLUMES_PATH = ("provider", "kubernetes", "rateLimitDeployment", "pod", "volumes")

# api/v1alpha1/envoygateway_types.go @ v1.9.0 type RateLimit: json fields backend, timeout, failClosed,
# telemetry; "If not set, FailClosed is False" (fail open). internal/xds/runner/runner.go copies it into the
# translator's GlobalRateLimitSettings; internal/xds/translator/ratelimit.go sets the filter's
# failure_mode_deny only when it is true. Envoy's ratelimit filter then answers 500 when the service fails.
ENVOY_GATEWAY_RATE_LIMIT_FIELDS = ("backend", "timeout", "failClosed", "telemetry")
FAIL_CLOSED_DEFAULT = False
# api/v1alpha1/ratelimit_types.go @ v1.9.0: RateLimitSpec json fields type, global, local; GlobalRateLimit
# and LocalRateLimit hold only rules: a BackendTrafficPolicy cannot say fail open / fail closed.
BACKEND_TRAFFIC_POLICY_RATE_LIMIT_FIELDS = ("type", "global", "local")
GLOBAL_RATE_LIMIT_FIELDS = ("rules",)
# internal/xds/translator/ratelimit.go getRateLimitServiceClusterName: the Envoy cluster of the rate-limit
# service, which the alert on its membership reads.
RATE_LIMIT_SERVICE_CLUSTER = "ratelimit_cluster"
# internal/xds/translator/ratelimit.go @ v1.9.0: the filter's enable_x_ratelimit_headers is DRAFT_VERSION_03
# unless the listener's ClientTrafficPolicy sets headers.disableRateLimitHeaders
# (api/v1alpha1/clienttrafficpolicy_types.go) or a rule overrides it: inferctl verify's rate-limit check
# reads X-RateLimit-Limit from the answer.
DISABLE_RATE_LIMIT_HEADERS = "disableRateLimitHeaders"
# internal/xds/translator/httpfilters.go @ v1.9.0 newOrderedHTTPFilter: api_key_auth runs at order 7, the global
# ratelimit filter at 303, so the client id header that apiKeyAuth.forwardClientIDHeader sets is there when
# the rate-limit descriptors (clientSelectors on that header) are built.
FILTER_ORDER = {"envoy.filters.http.api_key_auth": 7, "envoy.filters.http.ratelimit": 303}
# internal/infrastructure/kubernetes/proxy/resource.go @ v1.9.0: the Envoy container's port "metrics" is
# bootstrap.EnvoyStatsPort (19001, internal/xds/bootstrap/bootstrap.go) unless Prometheus is disabled in the
# EnvoyProxy's telemetry; internal/xds/bootstrap/bootstrap.yaml.tpl serves it at /stats/prometheus.
PROXY_METRICS_PORT_NAME = "metrics"
PROXY_METRICS_PATH = "/stats/prometheus"

# internal/gatewayapi/securitypolicy.go @ v1.9.0: buildAPIKeyAuth resolves each apiKeyAuth.credentialRefs
# Secret (validateSecretRef, an error when it does not exist); on any error the policy's HTTPRoute/GRPCRoute
# routes get a direct response with status 500 ("setting 500 direct response in routes due to errors in
# SecurityPolicy"), so a Secret the CSI driver never synced makes every request a 500.
MISSING_CREDENTIALS_STATUS = 500


def _dig(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path:
        doc = (doc or {}).get(part) or {}
    return doc


def generated_rate_limit_pod(envoy_gateway: dict[str, Any]) -> tuple[set[str], set[str], dict[str, str]]:
    """(volume mounts, volumes, Redis TLS env) of the rate-limit pod Envoy Gateway v1.9.0 generates from its
    config, as far as the facts above say."""
    tls = _dig(envoy_gateway, ("rateLimit", "backend", "redis")).get("tls")
    mounts, volumes, env = set(ALWAYS_MOUNTED), set(ALWAYS_VOLUMES), {}
    if tls is not None:
        mounts.add(MOUNTED_WITH_TLS)
        env.update(ENV_WITH_TLS)
        if tls.get("certificateRef"):
            volumes.add(VOLUME_WITH_CERTIFICATE_REF)
            env.update(ENV_WITH_CERTIFICATE_REF)
    volumes |= {v["name"] for v in _dig(envoy_gateway, POD_VOLUMES_PATH) or []}
    container = _dig(envoy_gateway, ("provider", "kubernetes", "rateLimitDeployment", "container"))
    mounts |= {m["name"] for m in container.get("volumeMounts", [])}
    return mounts, volumes, env


def test_the_facts_were_read_at_the_pinned_chart_version():
    assert ENVOY_GATEWAY.version == TAG


def test_the_model_reproduces_the_upstream_bug_for_tls_without_a_certificate():
    bare = {"rateLimit": {"backend": {"type": "Redis", "redis": {"url": "r:6379", "tls": {}}}}}
    mounts, volumes, _ = generated_rate_limit_pod(bare)
    assert mounts - volumes == {"redis-certs"}  # what the API server rejects


@pytest.mark.parametrize(("tls", "auth"), [(True, True), (True, False), (False, True), (False, False)])
def test_every_volume_the_rate_limit_container_mounts_exists(tls, auth):
    values = controller_values("redis.example:6379", tls=tls, auth=auth)["config"]["envoyGateway"]
    mounts, volumes, env = generated_rate_limit_pod(values)
    assert mounts <= volumes, f"mounted without a volume: {sorted(mounts - volumes)}"
    # TLS to Redis with no client certificate: ElastiCache authenticates by AUTH token.
    assert env == (ENV_WITH_TLS if tls else {})
    extra = {v["name"]: v for v in _dig(values, POD_VOLUMES_PATH) or []}
    assert extra == ({REDIS_CERTS_VOLUME: {"name": REDIS_CERTS_VOLUME, "emptyDir": {}}} if tls else {})


def test_fail_closed_is_the_gateway_wide_install_setting():
    for fail_closed in (True, False):
        rate_limit = controller_values("r:6379", fail_closed=fail_closed)["config"]["envoyGateway"]["rateLimit"]
        assert set(rate_limit) <= set(ENVOY_GATEWAY_RATE_LIMIT_FIELDS)
        assert rate_limit["failClosed"] is fail_closed
    assert controller_values("r:6379")["config"]["envoyGateway"]["rateLimit"]["failClosed"] is FAIL_CLOSED_DEFAULT


def test_the_backend_traffic_policy_uses_only_fields_its_v1_9_0_crd_has():
    policy = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}}, project="p", stack="s", region="us-west-2"
    ).edge.policy()
    (btp,) = [
        o
        for o in render_gateway_objects(policy, TARGET)
        if o["kind"] == "BackendTrafficPolicy" and "rateLimit" in o["spec"]
    ]
    rate_limit = btp["spec"]["rateLimit"]
    assert set(rate_limit) <= set(BACKEND_TRAFFIC_POLICY_RATE_LIMIT_FIELDS)
    assert set(rate_limit["global"]) <= set(GLOBAL_RATE_LIMIT_FIELDS)


@pytest.mark.parametrize(
    ("stack", "fail_closed", "tls"), [("dev", False, False), ("prod", True, True), ("npu", True, True)]
)
def test_each_stack_installs_a_rate_limit_service_that_can_start(stack_plan, stack, fail_closed, tls):
    resources = stack_plan(stack).run.resources
    release = next(r for r in resources if r.type.endswith("v3:Release") and r.inputs.get("name") == "envoy-gateway")
    gateway = release.inputs["values"]["config"]["envoyGateway"]
    assert ("tls" in gateway["rateLimit"]["backend"]["redis"]) is tls
    mounts, volumes, _ = generated_rate_limit_pod(gateway)
    assert mounts <= volumes
    assert gateway["rateLimit"]["failClosed"] is fail_closed


def test_nothing_we_render_turns_the_x_ratelimit_headers_off():
    policy = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}}, project="p", stack="s", region="us-west-2"
    ).edge.policy()
    rendered = repr(render_gateway_objects(policy, TARGET))
    assert DISABLE_RATE_LIMIT_HEADERS not in rendered
    assert q.RATE_LIMIT_SERVICE_CLUSTER == RATE_LIMIT_SERVICE_CLUSTER


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_prometheus_scrapes_the_gateways_envoy_pods_where_envoy_gateway_serves_their_stats(stack_plan, stack):
    """Without it the edge alerts (EdgeRateLimitServiceUnavailable among them) read nothing."""
    resources = stack_plan(stack).run.resources
    envoy_proxy = next(r for r in resources if r.type.endswith(":EnvoyProxy"))
    pod_labels = envoy_proxy.inputs["spec"]["provider"]["kubernetes"]["envoyDeployment"]["pod"]["labels"]
    assert "telemetry" not in envoy_proxy.inputs["spec"]  # Prometheus stays on (Envoy Gateway's default)
    monitors = [r for r in resources if r.type == "kubernetes:monitoring.coreos.com/v1:PodMonitor"]
    (monitor,) = [
        m for m in monitors if m.inputs["metadata"]["namespace"] == envoy_proxy.inputs["metadata"]["namespace"]
    ]
    spec = monitor.inputs["spec"]
    assert spec["selector"]["matchLabels"].items() <= pod_labels.items() and spec["selector"]["matchLabels"]
    (endpoint,) = spec["podMetricsEndpoints"]
    assert (endpoint["port"], endpoint["path"]) == (PROXY_METRICS_PORT_NAME, PROXY_METRICS_PATH)


def test_rate_limits_select_on_the_header_api_key_auth_sets_before_the_rate_limit_filter_runs():
    policy = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}}, project="p", stack="s", region="us-west-2"
    ).edge.policy()
    objects = {o["kind"]: o for o in render_gateway_objects(policy, TARGET) if "mergeType" not in o["spec"]}
    forwarded = objects["SecurityPolicy"]["spec"]["apiKeyAuth"]["forwardClientIDHeader"]
    selected = {
        h["name"]
        for rule in objects["BackendTrafficPolicy"]["spec"]["rateLimit"]["global"]["rules"]
        for selector in rule["clientSelectors"]
        for h in selector["headers"]
    }
    assert selected == {forwarded}
    assert FILTER_ORDER["envoy.filters.http.api_key_auth"] < FILTER_ORDER["envoy.filters.http.ratelimit"]
