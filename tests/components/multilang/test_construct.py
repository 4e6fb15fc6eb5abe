"""Construct through the running plugin, as the engine calls it for a TypeScript or YAML program's
``new Network(...)``: the facade and the component under it register with the (stand-in) engine, with the
same children, names and inputs a Python program gets from the component itself."""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from pulumi.runtime.proto import provider_pb2

from inference_platform.components.network import FlowLogsArgs
from inference_platform.components.network import Network as PythonNetwork
from inference_platform.components.network import NetworkArgs as PythonNetworkArgs
from inference_platform.offline_plan.engine import run_function

PKG = "inference-platform"
ACCOUNT = "123456789012"
KEY = f"arn:aws:kms:us-west-2:{ACCOUNT}:key/0f6b1c9e-0000-4000-8000-000000000001"
ZONES = ["us-west-2a", "us-west-2b"]
NETWORK = {
    "cidr": "10.0.0.0/16",
    "availabilityZones": ZONES,
    "clusterName": "team-a",
    "region": "us-west-2",
    "accountId": ACCOUNT,
    "flowLogsKmsKeyArn": KEY,
    "natGateways": "perAz",
}
INPUTS: dict[str, dict[str, Any]] = {
    "Network": NETWORK,
    "Cluster": {
        "clusterName": "team-a",
        "kubernetesVersion": "1.33",
        "subnetIds": ["subnet-0a", "subnet-0b"],
        "secretsKeyArn": KEY,
        "logsKeyArn": KEY,
        "region": "us-west-2",
    },
    "NodePool": {
        "clusterName": "team-a",
        "namePrefix": "team-a",
        "kubernetesVersion": "1.33",
        "nodeRoleArn": f"arn:aws:iam::{ACCOUNT}:role/team-a-nodes",
        "pool": {"name": "gpu", "instanceTypes": ["g6e.2xlarge"], "maxSize": 2, "capacityTypes": ["on-demand"]},
        "clusterZones": ZONES,
        "subnetIdsByZone": {"us-west-2a": "subnet-0a", "us-west-2b": "subnet-0b"},
        "securityGroupIds": ["sg-0c"],
    },
    "ModelStore": {
        "namePrefix": "team-a-models",
        "accountId": ACCOUNT,
        "kmsKeyArn": KEY,
        "lifecycle": {"coldStorageClass": "INTELLIGENT_TIERING"},
    },
    "InferenceService": {
        "namespace": "inference",
        "serviceAccount": "triton",
        "image": f"{ACCOUNT}.dkr.ecr.us-west-2.amazonaws.com/triton@sha256:{'a' * 64}",
        "imageVersion": "v1",
        "servingConfig": json.dumps({"model": "llama"}),
        "region": "us-west-2",
        "engineUri": "s3://team-a-models/models/engines/v1/",
        "tokenizerUri": "s3://team-a-models/models/tokenizers/v1/",
        "modelVolumeGib": 50,
        "modelSource": "download",
        "pool": "gpu",
        "tolerations": [{"key": "nvidia.com/gpu", "value": "true"}],
        "cpu": 6,
        "memoryGib": 48,
    },
    "EdgeGateway": {
        "cluster": "team-a",
        "namespace": "envoy-gateway-system",
        "gatewayName": "inference",
        "backendService": "triton",
        "backendNamespace": "inference",
        "backendPort": 9000,
        "inferencePodLabels": {"app.kubernetes.io/name": "triton", "app.kubernetes.io/instance": "c-inferenceservice"},
        "credentialsSecret": "inference-api-keys",
        "redisUrl": "rate-limit-redis.envoy-gateway-system.svc:6379",
        "namePrefix": "team-a",
        "kmsKeyArn": KEY,
        "region": "us-west-2",
        "tiers": [{"name": "standard", "requestsPerMinute": 60, "concurrentStreams": 4}],
        "clients": [{"clientId": "acme", "tier": "standard"}, {"clientId": "globex", "tier": "standard"}],
    },
    "PublicEndpoint": {
        "namespace": "edge",
        "namePrefix": "team-a",
        "clusterName": "team-a",
        "cluster": "team-a",
        "domain": "api.example.com",
        "backendService": "envoy-inference",
        "backendPort": 8080,
        "securityGroupId": "sg-0d",
        "accessLogBucket": "team-a-logs",
        "certificateArn": f"arn:aws:acm:us-west-2:{ACCOUNT}:certificate/0f6b1c9e-0000-4000-8000-000000000002",
        "waf": {"managedRuleGroups": ["AWSManagedRulesCommonRuleSet"], "ipRateLimit": 1000},
    },
}
# The component each facade builds, and resources of it every construction must register.
INNER = {
    "Network": ("inference:network:Network", {"aws:ec2/vpc:Vpc", "aws:ec2/subnet:Subnet", "aws:ec2/flowLog:FlowLog"}),
    "Cluster": ("inference:cluster:Cluster", {"aws:eks/cluster:Cluster", "aws:cloudwatch/logGroup:LogGroup"}),
    "NodePool": (
        "inference:compute:NodePool",
        {"aws:eks/nodeGroup:NodeGroup", "aws:ec2/launchTemplate:LaunchTemplate"},
    ),
    "ModelStore": ("inference:storage:ModelStore", {"aws:s3/bucket:Bucket"}),
    "InferenceService": (
        "inference:serving:InferenceService",
        {"kubernetes:apps/v1:Deployment", "kubernetes:core/v1:Service", "kubernetes:core/v1:ConfigMap"},
    ),
    "EdgeGateway": (
        "inference:edge:EdgeGateway",
        {
            "kubernetes:helm.sh/v3:Release",
            "kubernetes:gateway.networking.k8s.io/v1:Gateway",
            "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
            "kubernetes:gateway.envoyproxy.io/v1alpha1:BackendTrafficPolicy",
            "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy",
            "kubernetes:networking.k8s.io/v1:NetworkPolicy",
            "inference:edge:ClientCredentials",
            "aws:secretsmanager/secret:Secret",
        },
    ),
    "PublicEndpoint": (
        "inference:edge:PublicEndpoint",
        {"aws:wafv2/webAcl:WebAcl", "kubernetes:networking.k8s.io/v1:IngressClass"},
    ),
}


@pytest.fixture(scope="module")
def k8s(engine) -> str:
    """The consumer's Kubernetes provider, built from the Cluster's kubeconfig in a real program."""
    return engine.register_provider("kubernetes", "k8s", {"kubeconfig": "{}"})


def construct(
    plugin, engine, component: str, name: str, inputs: dict[str, Any], providers: dict[str, str], depends_on=()
):
    struct = struct_pb2.Struct()
    struct.update(inputs)
    request = provider_pb2.ConstructRequest(
        project=engine.recorder.project,
        stack=engine.recorder.stack,
        name=name,
        type=f"{PKG}:index:{component}",
        inputs=struct,
        parent=engine.recorder.stack_urn,
        monitorEndpoint=engine.address,
        dryRun=True,
        providers=providers,
        dependencies=list(depends_on),
    )
    return plugin.Construct(request, timeout=120)


def _under(engine, urn: str) -> list:
    return [
        r
        for r in engine.recorder.recorded.values()
        if r.urn != urn and r.urn.split("::")[2].startswith(urn.split("::")[2] + "$")
    ]


@pytest.mark.parametrize("component", list(INPUTS))
def test_construct_registers_the_facade_the_component_and_its_children(plugin, engine, k8s, component):
    name = f"c-{component.lower()}"
    response = construct(plugin, engine, component, name, INPUTS[component], {"kubernetes": k8s})
    facade = f"{PKG}:index:{component}"
    assert response.urn == f"urn:pulumi:dev::consumer::{facade}::{name}"
    record = engine.recorder.recorded[response.urn]
    assert not record.custom and record.parent is None  # a child of the consumer's stack
    inner_type, expected = INNER[component]
    inner = engine.recorder.recorded[f"urn:pulumi:dev::consumer::{facade}${inner_type}::{name}"]
    assert inner.parent == response.urn
    children = [
        r for r in engine.recorder.recorded.values() if r.urn.split("::")[2].startswith(f"{facade}${inner_type}$")
    ]
    assert expected <= {r.type for r in children}, sorted({r.type for r in children})
    assert all(r.name.startswith(name) for r in children)
    outputs = set(json.loads(open_schema())["resources"][facade]["properties"])
    assert set(response.state) <= outputs and response.state, (sorted(response.state), sorted(outputs))


def open_schema() -> str:
    from inference_platform.components.multilang.schema import SCHEMA_FILE

    return SCHEMA_FILE.read_text()


def test_kubernetes_objects_use_the_provider_the_caller_passed(plugin, engine, k8s):
    construct(plugin, engine, "InferenceService", "svc-provider", INPUTS["InferenceService"], {"kubernetes": k8s})
    objects = [
        r
        for r in engine.recorder.recorded.values()
        if r.type.startswith("kubernetes:") and r.name.startswith("svc-provider")
    ]
    assert objects and {r.provider for r in objects} == {k8s.rsplit("::", 1)[0]}


def test_every_kubernetes_object_waits_for_what_the_caller_depends_on(plugin, engine, k8s):
    namespace, _ = engine.register("kubernetes:core/v1:Namespace", "inference-ns", {"metadata": {"name": "inference"}})
    construct(
        plugin, engine, "InferenceService", "svc-after", INPUTS["InferenceService"], {"kubernetes": k8s}, [namespace]
    )
    objects = [
        r
        for r in engine.recorder.recorded.values()
        if r.type.startswith("kubernetes:") and r.name.startswith("svc-after")
    ]
    assert objects and all(namespace in r.dependencies for r in objects), [
        r.urn for r in objects if namespace not in r.dependencies
    ]


def test_the_facade_builds_what_the_python_component_builds(plugin, engine):
    """Same child names, types and inputs as ``Network`` built from Python with the same values."""
    construct(plugin, engine, "Network", "same", NETWORK, {})
    through_plugin = {
        (r.type, r.name): r.inputs
        for r in engine.recorder.recorded.values()
        if "$inference:network:Network$" in r.urn and r.name.startswith("same-")
    }

    def python_program() -> None:
        PythonNetwork(
            "same",
            PythonNetworkArgs(
                cidr=NETWORK["cidr"],
                availability_zones=ZONES,
                cluster_name=NETWORK["clusterName"],
                region=NETWORK["region"],
                account_id=ACCOUNT,
                flow_logs=FlowLogsArgs(kms_key_arn=KEY),
                nat_gateways="perAz",
            ),
        )

    direct = {(r.type, r.name): r.inputs for r in run_function(python_program).resources if r.custom}
    assert len(direct) > 20 and through_plugin == direct


def _error(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    return raised.value


def test_a_missing_required_input_is_refused_naming_it(plugin, engine):
    inputs = {k: v for k, v in NETWORK.items() if k != "cidr"}
    error = _error(lambda: construct(plugin, engine, "Network", "no-cidr", inputs, {}))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    trailers = dict(error.trailing_metadata() or ())
    assert b"Missing required input 'cidr' on 'Network'" in trailers.get("grpc-status-details-bin", b"")


def test_a_value_outside_an_enum_is_refused_naming_the_property(plugin, engine):
    inputs = {**NETWORK, "natGateways": "everywhere"}
    error = _error(lambda: construct(plugin, engine, "Network", "bad-nat", inputs, {}))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = dict(error.trailing_metadata() or ()).get("grpc-status-details-bin", b"")
    assert b"natGateways" in details and b"everywhere" in details


def test_the_component_s_own_validation_reaches_the_caller(plugin, engine):
    inputs = {**NETWORK, "availabilityZones": ["eu-west-1a"]}
    error = _error(lambda: construct(plugin, engine, "Network", "bad-zone", inputs, {}))
    assert "availability_zones: ['eu-west-1a'] are not zones of us-west-2" in error.details()


def test_an_unknown_instance_type_is_refused_naming_the_pool(plugin, engine):
    pool = {**INPUTS["NodePool"], "pool": {"name": "gpu", "instanceTypes": ["g99.mega"]}}
    error = _error(lambda: construct(plugin, engine, "NodePool", "bad-type", pool, {}))
    assert "invalid NodePool arguments: pool:" in error.details() and "g99.mega" in error.details()


def test_kubernetes_components_say_how_to_pass_the_provider(plugin, engine):
    error = _error(lambda: construct(plugin, engine, "InferenceService", "no-k8s", INPUTS["InferenceService"], {}))
    assert "providers: {kubernetes: <provider>}" in error.details()


# Every input of every facade set (nested types included): each key must reach a real Args field.
FULL: dict[str, dict[str, Any]] = {
    "Network": {**NETWORK, "flowLogRetentionDays": 90, "natGateways": "perAz", "intraSubnets": True},
    "Cluster": {
        **INPUTS["Cluster"],
        "partition": "aws",
        "logRetentionDays": 30,
        "publicAccessCidrs": ["203.0.113.0/24"],
        "privateAccessCidrs": ["10.20.0.0/16"],
        "privateAccessSecurityGroupIds": ["sg-0123456789abcdef0"],
        "adminPrincipalArns": [f"arn:aws:iam::{ACCOUNT}:role/platform-admin"],
        "readOnlyPrincipalArns": [f"arn:aws:iam::{ACCOUNT}:role/platform-viewer"],
        "supportType": "EXTENDED",
        "deletionProtection": True,
        "protect": True,
    },
    "NodePool": {
        **INPUTS["NodePool"],
        "pool": {
            "name": "gpu",
            "instanceTypes": ["g6e.2xlarge"],
            "capacityTypes": ["spot"],
            "reservationIds": [],
            "minSize": 1,
            "maxSize": 3,
            "desiredSize": 2,
            "diskSizeGib": 300,
            "zones": ["us-west-2b"],
            "efa": False,
            "amiFamily": "bottlerocket",
            "labels": {"team": "a"},
        },
        "instanceTags": {"team": "a"},
        "volumeKmsKeyArn": KEY,
        "autoscalerClusterName": "team-a",
    },
    "ModelStore": {
        **INPUTS["ModelStore"],
        "modelPrefix": "weights/",
        "lifecycle": {
            "noncurrentVersionTransitionDays": 45,
            "noncurrentVersionExpirationDays": 120,
            "abortIncompleteMultipartUploadDays": 3,
            "coldPrefix": "old/",
            "coldStorageClass": "STANDARD_IA",
            "coldTransitionDays": 60,
        },
        "accessLogRetentionDays": 400,
        "forceDestroy": True,
        "protect": False,
        "region": "us-west-2",
        "loadBalancerLogPrefix": "alb",
        "partition": "aws",
    },
    "InferenceService": {
        **INPUTS["InferenceService"],
        "modelSource": "fsx",
        "cacheClaimName": "model-cache",
        "cacheEnginePath": "/models/engines/v1",
        "cacheTokenizerPath": "/models/tokenizers/v1",
        "engineManifestSha256": "b" * 64,
        "tokenizerManifestSha256": "c" * 64,
        "tolerations": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
        "acceleratorResource": "nvidia.com/gpu",
        "accelerators": 1,
        "efa": 0,
        "sharedMemoryGib": 4,
        "replicas": 2,
        "nodes": 1,
        "neuron": False,
        "loadBalancerCidrs": ["10.0.0.0/24"],
        "serviceMonitor": False,
        "appName": "llm",
    },
    "EdgeGateway": {
        **INPUTS["EdgeGateway"],
        "tiers": [
            {"name": "standard", "requestsPerMinute": 60, "concurrentStreams": 4},
            {"name": "premium", "requestsPerMinute": 600, "concurrentStreams": 16},
        ],
        "clients": [{"clientId": "acme", "tier": "premium"}, {"clientId": "globex", "tier": "standard"}],
        "authEnabled": True,
        "apiKeyHeader": "x-team-key",
        "clientIdHeader": "x-team-client",
        "idleTimeoutSeconds": 900,
        "circuitBreaker": {"maxConnections": 512, "maxPendingRequests": 32, "maxParallelRequests": 40},
        "retries": 1,
        "maxRequestBytes": 65536,
        "requestHeadersTimeoutSeconds": 5,
        "servedModels": ["llama"],
        "extraRoutes": [
            {
                "key": "batch",
                "endpoints": [
                    {"method": "POST", "path": "/v1/files"},
                    {"method": "GET", "path": "/v1/batches", "match": "PathPrefix"},
                ],
                "maxRequestBytes": 1048576,
                "service": "batch-api",
                "serviceNamespace": "batch",
                "port": 8080,
            },
            {"key": "uploads", "endpoints": [{"method": "PUT", "path": "/v1/uploads", "match": "Exact"}]}
            | {"service": "uploads", "serviceNamespace": "envoy-gateway-system", "port": 8081},
        ],
        "hostname": "api.example.com",
        "gatewayClass": "team-a-envoy",
        "listenerPort": 8081,
        "proxyService": "envoy-inference",
        "proxyReplicas": 3,
        "routing": {"mode": "inference-pool", "prefixTokens": 512, "perTenant": True, "loadBoundPercent": 200},
        "neuronReplicas": True,
        "redisTls": True,
        "rateLimitFailClosed": True,
        "redisAuthSecretArn": f"arn:aws:secretsmanager:us-west-2:{ACCOUNT}:secret:team-a-redis-auth-AbCdEf",
        "partition": "aws",
        "protect": True,
    },
    "PublicEndpoint": {
        **INPUTS["PublicEndpoint"],
        "waf": {
            "managedRuleGroups": ["AWSManagedRulesCommonRuleSet", "AWSManagedRulesKnownBadInputsRuleSet"],
            "ipRateLimit": 2000,
            "windowSeconds": 60,
            "apiKeyRateLimit": 500,
            "apiKeyHeader": "x-api-key",
            "countedRules": {"AWSManagedRulesCommonRuleSet": ["SizeRestrictions_BODY"]},
        },
        "hostedZoneId": "Z0123456789ABCDEFGHIJ",
        "hostedZoneName": "example.com",
        "tlsPolicy": "ELBSecurityPolicy-TLS13-1-2-2021-06",
        "idleTimeoutSeconds": 900,
        "redirectHttp": False,
        "deletionProtection": True,
        "accessLogPrefix": "alb",
        "partition": "aws",
        "tags": {"team": "a"},
    },
}


def _schema_keys(schema: dict, properties: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, prop in properties.items():
        keys.add(prefix + key)
        ref = prop.get("$ref") or prop.get("items", {}).get("$ref")
        nested = schema["types"].get(ref.removeprefix("#/types/"), {}) if ref else {}
        keys |= _schema_keys(schema, nested.get("properties", {}), f"{prefix}{key}.")
    return keys


def _given_keys(value: Any, prefix: str = "") -> set[str]:
    if isinstance(value, list):
        return set().union(*(_given_keys(v, prefix) for v in value if isinstance(v, dict)))
    return {k for key, v in value.items() for k in {prefix + key, *_nested(v, prefix + key)}}


def _nested(value: Any, key: str) -> set[str]:
    if isinstance(value, dict) and not key.endswith(("Tags", "tags", "labels", "Labels", "ByZone", "countedRules")):
        return _given_keys(value, f"{key}.")
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return _given_keys(value, f"{key}.")
    return set()


@pytest.mark.parametrize("component", list(FULL))
def test_every_input_of_the_schema_reaches_the_component(plugin, engine, k8s, component):
    schema = json.loads(open_schema())
    resource = schema["resources"][f"{PKG}:index:{component}"]
    assert _given_keys(FULL[component]) == _schema_keys(schema, resource["inputProperties"])
    name = f"full-{component.lower()}"
    response = construct(plugin, engine, component, name, FULL[component], {"kubernetes": k8s})
    assert response.urn.endswith(f"::{name}")


def test_values_given_to_the_facades_reach_the_resources(plugin, engine, k8s):
    for component in ("Network", "Cluster", "NodePool", "InferenceService"):
        construct(plugin, engine, component, f"spot-{component.lower()}", FULL[component], {"kubernetes": k8s})
    records = {(r.type, r.name): r for r in engine.recorder.recorded.values()}
    nats = [r for (t, n), r in records.items() if t == "aws:ec2/natGateway:NatGateway" and n.startswith("spot-network")]
    assert len(nats) == len(ZONES)  # natGateways perAz
    assert records[("aws:cloudwatch/logGroup:LogGroup", "spot-network-flow-logs")].inputs["retentionInDays"] == 90
    eks = records[("aws:eks/cluster:Cluster", "spot-cluster-eks")]
    assert eks.protect and eks.inputs["upgradePolicy"]["supportType"] == "EXTENDED"
    groups = [
        r for (t, n), r in records.items() if t == "aws:eks/nodeGroup:NodeGroup" and n.startswith("spot-nodepool")
    ]
    assert [g.inputs["scalingConfig"] for g in groups] == [{"desiredSize": 2.0, "maxSize": 3.0, "minSize": 1.0}]
    assert groups[0].inputs["capacityType"] == "SPOT" and groups[0].inputs["labels"]["team"] == "a"
    deployment = records[("kubernetes:apps/v1:Deployment", "spot-inferenceservice-deployment")]
    assert deployment.inputs["metadata"]["name"] == "llm" and deployment.inputs["spec"]["replicas"] == 2.0


def _gateway_objects(engine, name: str) -> list:
    return [
        r
        for r in engine.recorder.recorded.values()
        if r.custom and "$inference:edge:EdgeGateway$" in r.urn and r.name.startswith(name)
    ]


def test_the_gateway_s_kubernetes_objects_use_the_caller_s_provider_and_wait_for_its_depends_on(plugin, engine, k8s):
    service, _ = engine.register("kubernetes:core/v1:Service", "triton-svc", {"metadata": {"name": "triton"}})
    construct(plugin, engine, "EdgeGateway", "gw-after", INPUTS["EdgeGateway"], {"kubernetes": k8s}, [service])
    objects = [r for r in _gateway_objects(engine, "gw-after") if r.type.startswith("kubernetes:")]
    assert {r.provider for r in objects} == {k8s.rsplit("::", 1)[0]}
    # The controller and the NetworkPolicy wait for the InferenceService; the custom resources wait for the controller.
    waiting = {r.type for r in objects if service in r.dependencies}
    assert {"kubernetes:helm.sh/v3:Release", "kubernetes:networking.k8s.io/v1:NetworkPolicy"} <= waiting
    release = next(r.urn for r in objects if r.type == "kubernetes:helm.sh/v3:Release")
    gateways = [r for r in objects if r.type == "kubernetes:gateway.networking.k8s.io/v1:Gateway"]
    assert gateways and all(release in r.dependencies for r in gateways)


def test_the_gateway_facade_builds_what_the_python_gateway_builds(plugin, engine, k8s):
    """Same child names, types and inputs as ``EdgeGateway`` built from Python with the same values (every
    input set, so each one is compared where it lands)."""
    from inference_platform.catalog.edge_routing import Routing
    from inference_platform.components.edge import (
        Backend,
        CircuitBreaker,
        Client,
        EdgeGateway,
        EdgeGatewayArgs,
        EdgePolicy,
        Endpoint,
        GatewayTarget,
        RouteGroup,
        Tier,
    )

    given = FULL["EdgeGateway"]
    construct(plugin, engine, "EdgeGateway", "gw-same", given, {"kubernetes": k8s})
    through_plugin = {(r.type, r.name): r.inputs for r in _gateway_objects(engine, "gw-same")}

    def python_program() -> None:
        import pulumi_kubernetes as kubernetes

        tiers = {
            t["name"]: Tier(
                name=t["name"], requests_per_minute=t["requestsPerMinute"], concurrent_streams=t["concurrentStreams"]
            )
            for t in given["tiers"]
        }
        EdgeGateway(
            "gw-same",
            EdgeGatewayArgs(
                provider=kubernetes.Provider("k8s", kubeconfig="{}"),
                cluster=given["cluster"],
                policy=EdgePolicy(
                    clients=tuple(Client(client_id=c["clientId"], tier=tiers[c["tier"]]) for c in given["clients"]),
                    auth_enabled=True,
                    api_key_header="x-team-key",
                    client_id_header="x-team-client",
                    idle_timeout_seconds=900,
                    circuit_breaker=CircuitBreaker(
                        max_connections=512, max_pending_requests=32, max_parallel_requests=40
                    ),
                    retries=1,
                    max_request_bytes=65536,
                    request_headers_timeout_seconds=5,
                    served_models=("llama",),
                    routing=Routing(mode="inference-pool", prefix_tokens=512, per_tenant=True, load_bound_percent=200),
                    extra_routes=(
                        RouteGroup(
                            key="batch",
                            endpoints=(Endpoint("POST", "/v1/files"), Endpoint("GET", "/v1/batches", "PathPrefix")),
                            max_request_bytes=1048576,
                        ),
                        RouteGroup(key="uploads", endpoints=(Endpoint("PUT", "/v1/uploads"),), max_request_bytes=None),
                    ),
                ),
                target=GatewayTarget(
                    namespace=given["namespace"],
                    name=given["gatewayName"],
                    service=given["backendService"],
                    service_namespace=given["backendNamespace"],
                    port=given["backendPort"],
                    credentials_secret=given["credentialsSecret"],
                    hostname="api.example.com",
                    gateway_class="team-a-envoy",
                    listener_port=8081,
                    proxy_service="envoy-inference",
                    proxy_replicas=3,
                    backends=(
                        Backend(key="batch", service="batch-api", namespace="batch", port=8080),
                        Backend(key="uploads", service="uploads", namespace="envoy-gateway-system", port=8081),
                    ),
                ),
                inference_pod_labels=given["inferencePodLabels"],
                redis_url=given["redisUrl"],
                redis_tls=True,
                rate_limit_fail_closed=True,
                redis_auth_secret_arn=given["redisAuthSecretArn"],
                name_prefix=given["namePrefix"],
                kms_key_arn=KEY,
                region="us-west-2",
                partition="aws",
                protect=True,
                neuron_replicas=True,
            ),
        )

    direct = {
        (r.type, r.name): r.inputs
        for r in run_function(python_program).resources
        if r.custom and not r.type.startswith("pulumi:providers:")
    }
    assert len(direct) > 10 and set(through_plugin) == set(direct)
    assert [d for key in direct for d in _differences(through_plugin[key], direct[key], str(key))] == []


def _differences(got: Any, want: Any, where: str) -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        keys = sorted(set(got) | set(want))
        return [d for k in keys for d in _differences(got.get(k), want.get(k), f"{where}.{k}")]
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        return [d for i, (g, w) in enumerate(zip(got, want, strict=True)) for d in _differences(g, w, f"{where}[{i}]")]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


def test_a_client_of_an_unknown_tier_is_refused_naming_both(plugin, engine, k8s):
    inputs = {**INPUTS["EdgeGateway"], "clients": [{"clientId": "acme", "tier": "gold"}]}
    error = _error(lambda: construct(plugin, engine, "EdgeGateway", "gw-gold", inputs, {"kubernetes": k8s}))
    assert "invalid EdgeGateway arguments: clients: 'acme' names tier 'gold'; the tiers are ['standard']" in (
        error.details()
    )


def test_the_edge_policy_s_own_checks_reach_the_caller(plugin, engine, k8s):
    inputs = {**INPUTS["EdgeGateway"], "clientIdHeader": "X-API-Key"}
    error = _error(lambda: construct(plugin, engine, "EdgeGateway", "gw-header", inputs, {"kubernetes": k8s}))
    assert "invalid EdgeGateway arguments: client id header 'X-API-Key' is a credential header" in error.details()
    routes = [{"key": "Batch", "endpoints": [{"method": "GET", "path": "/v1/batches"}]}]
    routes[0] |= {"service": "batch-api", "serviceNamespace": "batch", "port": 8080}
    error = _error(
        lambda: construct(
            plugin,
            engine,
            "EdgeGateway",
            "gw-route",
            {**INPUTS["EdgeGateway"], "extraRoutes": routes},
            {"kubernetes": k8s},
        )
    )
    assert "invalid EdgeGateway arguments: route group key 'Batch' is not a lower-case name" in error.details()
    inputs = {**INPUTS["EdgeGateway"], "inferencePodLabels": {}}
    error = _error(lambda: construct(plugin, engine, "EdgeGateway", "gw-labels", inputs, {"kubernetes": k8s}))
    assert "inference_pod_labels: required (an empty selector would admit every pod)" in error.details()
    inputs = {**INPUTS["EdgeGateway"], "routing": {"mode": "envoy", "loadBoundPercent": 50}}
    error = _error(lambda: construct(plugin, engine, "EdgeGateway", "gw-bound", inputs, {"kubernetes": k8s}))
    assert "invalid EdgeGateway arguments: routing: load_bound_percent 50 out of 100-1000" in error.details()


def test_the_gateway_says_how_to_pass_the_provider(plugin, engine):
    error = _error(lambda: construct(plugin, engine, "EdgeGateway", "gw-no-k8s", INPUTS["EdgeGateway"], {}))
    assert "invalid EdgeGateway arguments: providers: the cluster's Kubernetes provider is required" in error.details()


def test_a_fraction_where_the_gateway_counts_is_refused_naming_the_input(plugin, engine, k8s):
    """The engine sends numbers as doubles: whole ones become ints (see the Python comparison above), and
    a fraction is refused rather than rounded."""
    inputs = {
        **INPUTS["EdgeGateway"],
        "retries": 1.5,
        "tiers": [{"name": "standard", "requestsPerMinute": 60.5, "concurrentStreams": 4}],
    }
    error = _error(lambda: construct(plugin, engine, "EdgeGateway", "gw-half", inputs, {"kubernetes": k8s}))
    assert "retries: 1.5 is not a whole number" in error.details()
    assert "tiers[0].requestsPerMinute: 60.5 is not a whole number" in error.details()


def test_whole_numbers_are_rendered_as_a_python_program_renders_them(plugin, engine, k8s):
    """The engine sends ``900`` as ``900.0``: the facades pass it on as ``900``, so strings rendered from
    numbers (an ALB attribute, an extended-resource quantity) carry no ``.0`` the ALB API would refuse."""
    for component in ("PublicEndpoint", "InferenceService"):
        construct(plugin, engine, component, f"whole-{component.lower()}", FULL[component], {"kubernetes": k8s})
    records = {(r.type, r.name): r for r in engine.recorder.recorded.values()}
    params = records[("kubernetes:elbv2.k8s.aws/v1beta1:IngressClassParams", "whole-publicendpoint-class-params")]
    attributes = {a["key"]: a["value"] for a in params.inputs["spec"]["loadBalancerAttributes"]}
    assert attributes["idle_timeout.timeout_seconds"] == "900"
    deployment = records[("kubernetes:apps/v1:Deployment", "whole-inferenceservice-deployment")]
    (server,) = [
        c
        for c in deployment.inputs["spec"]["template"]["spec"]["containers"]
        if "nvidia.com/gpu" in c["resources"]["limits"]
    ]
    assert server["resources"]["limits"]["nvidia.com/gpu"] == "1"
