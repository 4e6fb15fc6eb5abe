"""The component provider's schema: asked of the running plugin over gRPC, as ``pulumi package add`` does, and
checked for what other languages' SDKs are generated from (types, required inputs, descriptions)."""

from __future__ import annotations

import json
from typing import get_args

import pytest
from google.protobuf import empty_pb2
from pulumi.runtime.proto import provider_pb2

from inference_platform import __version__
from inference_platform.catalog import edge_policy, pool_profile
from inference_platform.components.multilang.schema import SCHEMA_FILE, provider_schema, render
from inference_platform.components.network import vpc
from inference_platform.components.serving import pod
from inference_platform.components.storage import model_store

PKG = "inference-platform"
COMPONENTS = ("Network", "Cluster", "NodePool", "ModelStore", "InferenceService", "EdgeGateway", "PublicEndpoint")


@pytest.fixture(scope="module")
def schema(plugin) -> dict:
    response = plugin.GetSchema(provider_pb2.GetSchemaRequest(), timeout=60)
    return json.loads(response.schema)


def test_the_schema_file_is_the_schema_the_provider_infers():
    assert SCHEMA_FILE.read_text() == render(provider_schema()), (
        "provider/schema.json is stale: python -m inference_platform.components.multilang.schema"
    )


def test_the_running_plugin_answers_that_schema_and_its_version(plugin, schema):
    assert schema == json.loads(SCHEMA_FILE.read_text())
    assert schema["name"] == PKG and schema["version"] == __version__
    info = plugin.GetPluginInfo(empty_pb2.Empty(), timeout=30)
    assert info.version == __version__


def test_it_offers_the_main_components_as_components(schema):
    assert sorted(schema["resources"]) == sorted(f"{PKG}:index:{c}" for c in COMPONENTS)
    assert all(r["isComponent"] for r in schema["resources"].values())


@pytest.mark.parametrize(
    ("component", "required"),
    [
        ("Network", {"cidr", "availabilityZones", "clusterName", "region", "accountId", "flowLogsKmsKeyArn"}),
        ("Cluster", {"clusterName", "kubernetesVersion", "subnetIds", "secretsKeyArn", "logsKeyArn", "region"}),
        (
            "NodePool",
            {"clusterName", "namePrefix", "kubernetesVersion", "nodeRoleArn", "pool", "clusterZones"}
            | {"subnetIdsByZone", "securityGroupIds"},
        ),
        ("ModelStore", {"namePrefix", "accountId", "kmsKeyArn"}),
        (
            "InferenceService",
            {"namespace", "serviceAccount", "image", "imageVersion", "servingConfig", "region", "engineUri"}
            | {"tokenizerUri", "modelVolumeGib", "modelSource", "pool", "cpu", "memoryGib"},
        ),
        (
            "EdgeGateway",
            {"cluster", "namespace", "gatewayName", "backendService", "backendNamespace", "backendPort"}
            | {"inferencePodLabels", "credentialsSecret", "redisUrl", "namePrefix", "kmsKeyArn", "region"}
            | {"tiers", "clients"},
        ),
        (
            "PublicEndpoint",
            {"namespace", "namePrefix", "clusterName", "cluster", "domain", "backendService", "backendPort"}
            | {"securityGroupId", "accessLogBucket", "waf"},
        ),
    ],
)
def test_required_inputs_are_what_the_component_cannot_default(schema, component, required):
    resource = schema["resources"][f"{PKG}:index:{component}"]
    assert set(resource["requiredInputs"]) == required
    assert required < set(resource["inputProperties"])


def _properties(schema: dict):
    for token, resource in schema["resources"].items():
        for kind in ("inputProperties", "properties"):
            for name, prop in resource[kind].items():
                yield f"{token}.{kind}.{name}", prop
    for token, type_ in schema["types"].items():
        for name, prop in type_.get("properties", {}).items():
            yield f"{token}.{name}", prop


def test_every_component_type_property_and_enum_value_is_described(schema):
    undescribed = [where for where, prop in _properties(schema) if not prop.get("description", "").strip()]
    undescribed += [
        t
        for t in [*schema["resources"], *schema["types"]]
        if not (schema["resources"] | schema["types"])[t].get("description", "").strip()
    ]
    undescribed += [
        f"{token}.{value['name']}"
        for token, type_ in schema["types"].items()
        for value in type_.get("enum", [])
        if not value.get("description", "").strip()
    ]
    assert undescribed == []


def test_inputs_that_come_from_other_resources_are_inputs_and_the_rest_plain(schema):
    """Values the component computes with (a CIDR it carves, zones it iterates) are plain in every SDK; ids
    and ARNs that come from other resources stay Inputs (Outputs of another component are accepted)."""
    network = schema["resources"][f"{PKG}:index:Network"]["inputProperties"]
    assert network["cidr"] == network["cidr"] | {"type": "string", "plain": True}
    assert "plain" not in network["flowLogsKmsKeyArn"] and network["flowLogsKmsKeyArn"]["type"] == "string"
    cluster = schema["resources"][f"{PKG}:index:Cluster"]["inputProperties"]
    assert cluster["subnetIds"]["type"] == "array" and cluster["subnetIds"]["plain"] is True
    assert cluster["subnetIds"]["items"]["type"] == "string" and "plain" not in cluster["subnetIds"]["items"]
    pool = schema["resources"][f"{PKG}:index:NodePool"]["inputProperties"]
    assert pool["pool"]["$ref"] == f"#/types/{PKG}:index:NodePoolSpec"
    assert pool["subnetIdsByZone"]["additionalProperties"]["type"] == "string"
    spec = schema["types"][f"{PKG}:index:NodePoolSpec"]
    assert spec["type"] == "object" and set(spec["required"]) == {"name", "instanceTypes"}
    assert spec["properties"]["capacityTypes"]["items"]["type"] == "string"
    assert spec["properties"]["amiFamily"]["$ref"] == f"#/types/{PKG}:index:AmiFamily"
    outputs = schema["resources"][f"{PKG}:index:Network"]["properties"]
    assert outputs["privateSubnetIdsByZone"]["additionalProperties"]["type"] == "string"
    assert outputs["publicSubnetIds"]["items"]["type"] == "string"


def _enum(schema: dict, name: str) -> set:
    return {value["value"] for value in schema["types"][f"{PKG}:index:{name}"]["enum"]}


def test_enums_offer_exactly_what_the_components_accept(schema):
    assert _enum(schema, "NatGateways") == set(get_args(vpc.NatMode))
    assert _enum(schema, "AmiFamily") == set(get_args(pool_profile.AmiFamily))
    assert _enum(schema, "ColdStorageClass") == set(model_store.COLD_STORAGE_CLASSES)
    assert _enum(schema, "SupportType") == {"STANDARD", "EXTENDED"}
    kind = eval(pod.ModelSource.__annotations__["kind"], vars(pod))  # a string: pod.py postpones annotations
    assert _enum(schema, "ModelSourceKind") == set(get_args(kind))
    assert _enum(schema, "PathMatch") == set(get_args(edge_policy.PathMatch))


def test_the_gateway_takes_clients_and_tiers_as_objects_and_its_limits_as_optional_numbers(schema):
    """A client names its tier (a string the facade resolves); the tier's limits are required, the circuit
    breaker's bounds all default in components.edge.policy; what come from other resources stay Inputs."""
    gateway = schema["resources"][f"{PKG}:index:EdgeGateway"]["inputProperties"]
    assert gateway["clients"]["items"]["$ref"] == f"#/types/{PKG}:index:Client"
    assert gateway["tiers"]["items"]["$ref"] == f"#/types/{PKG}:index:Tier"
    assert set(schema["types"][f"{PKG}:index:Client"]["required"]) == {"clientId", "tier"}
    tier = schema["types"][f"{PKG}:index:Tier"]
    assert set(tier["required"]) == {"name", "requestsPerMinute", "concurrentStreams"}
    assert tier["properties"]["requestsPerMinute"]["type"] == "integer"
    breaker = schema["types"][f"{PKG}:index:CircuitBreaker"]
    assert "required" not in breaker and set(breaker["properties"]) == {
        "maxConnections",
        "maxPendingRequests",
        "maxParallelRequests",
    }
    assert gateway["inferencePodLabels"]["additionalProperties"]["type"] == "string"
    for name in ("cluster", "redisUrl", "kmsKeyArn", "redisAuthSecretArn"):
        assert "plain" not in gateway[name] and gateway[name]["type"] == "string", name
    assert gateway["apiKeyHeader"]["plain"] is True and gateway["clientIdHeader"]["plain"] is True
    routes = gateway["extraRoutes"]["items"]["$ref"].removeprefix("#/types/")
    assert set(schema["types"][routes]["required"]) == {"key", "endpoints", "service", "serviceNamespace", "port"}
    endpoint = schema["types"][f"{PKG}:index:Endpoint"]
    assert endpoint["properties"]["match"]["$ref"] == f"#/types/{PKG}:index:PathMatch"
    outputs = schema["resources"][f"{PKG}:index:EdgeGateway"]["properties"]
    assert outputs["clientSecretArns"]["additionalProperties"]["type"] == "string"
    assert outputs["proxyService"]["type"] == "string"
