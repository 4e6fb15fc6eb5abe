"""Settings added for issue 9 §4/§6: interface endpoint services, production deletion windows, world
coverage by CIDR sets, and a bound on Karpenter pools. Each bad value exits 2 naming its key."""

from __future__ import annotations

import pytest

from inference_platform.settings import SettingsError, load_settings

TAGS = {"owner": "team", "costCenter": "cc-1"}


def load(values, region="us-east-1"):
    return load_settings({"tags": TAGS, **values}, project="p", stack="s", region=region)


def problems(values, region="us-east-1"):
    with pytest.raises(SettingsError) as err:
        load(values, region)
    return {p.path: p.message for p in err.value.problems}


def test_endpoint_services_default_to_what_the_cluster_calls():
    net = load({"network": {"interfaceEndpoints": True}}).network
    assert "eks-auth" in net.endpoint_services(karpenter=False, fsx=False)
    assert "sqs" in net.endpoint_services(karpenter=True, fsx=False)
    assert load({}).network.endpoint_services(karpenter=True, fsx=True) == ()
    chosen = load({"network": {"interfaceEndpoints": True, "interfaceEndpointServices": ["sts", "eks-auth"]}})
    assert chosen.network.endpoint_services(karpenter=True, fsx=False) == ("sts", "eks-auth")


@pytest.mark.parametrize(
    ("network", "path", "words"),
    [
        ({"interfaceEndpoints": True, "interfaceEndpointServices": ["sts", "eks-auht"]},
         "network.interfaceEndpointServices[1]", ["'eks-auht'", "eks-auth"]),
        ({"interfaceEndpoints": True, "interfaceEndpointServices": ["sts", "sts"]},
         "network.interfaceEndpointServices", ["sts repeated"]),
        ({"interfaceEndpointServices": ["sts"]}, "network.interfaceEndpointServices", ["interfaceEndpoints: true"]),
        ({"interfaceEndpoints": True, "natGateways": "none", "interfaceEndpointServices": ["sts"]},
         "network.interfaceEndpointServices", ["no other path", "eks-auth"]),
    ],
)  # fmt: skip
def test_bad_endpoint_services_name_the_key(network, path, words):
    found = problems({"network": network})
    assert path in found, found
    assert all(w in found[path] for w in words), found[path]


KARPENTER = {"provisioning": "karpenter"}
PROD = {"environment": "production", "cluster": {"privateAccess": {"cidrs": ["10.255.0.0/24"]}}}


@pytest.mark.parametrize(
    ("values", "path", "words"),
    [
        # Production deletion windows: the 30 days Pulumi.yaml promises, not AWS's minimum.
        ({**PROD, "keys": {"deletionWindowDays": 7}}, "keys.deletionWindowDays", ["got 7", "30"]),
        ({**PROD, "secrets": {"recoveryWindowDays": 29}}, "secrets.recoveryWindowDays", ["got 29", "30"]),
        # CIDR sets covering the internet are the internet.
        ({"environment": "production", "cluster": {"publicAccessCidrs": ["0.0.0.0/1", "128.0.0.0/1"]}},
         "cluster.publicAccessCidrs", ["cover 0.0.0.0/0"]),
        ({"cluster": {"privateAccess": {"cidrs": ["0.0.0.0/1", "128.0.0.0/1"]}}}, "cluster.privateAccess.cidrs",
         ["cover 0.0.0.0/0"]),
        ({"edge": {"allowedIngressCidrs": ["0.0.0.0/1", "128.0.0.0/1"]}}, "edge.allowedIngressCidrs",
         ["cover 0.0.0.0/0", "write 0.0.0.0/0"]),
        # 75% of the internet is not a list of client ranges either.
        ({"environment": "production", "cluster": {"publicAccessCidrs": ["0.0.0.0/1", "128.0.0.0/2"]}},
         "cluster.publicAccessCidrs", ["cover 3,165,585,408 public IPv4 addresses (more than a /8)"]),
        ({"cluster": {"privateAccess": {"cidrs": ["0.0.0.0/1", "128.0.0.0/2"]}}}, "cluster.privateAccess.cidrs",
         ["more than a /8"]),
        ({"edge": {"allowedIngressCidrs": ["0.0.0.0/1", "128.0.0.0/2"]}}, "edge.allowedIngressCidrs",
         ["more than a /8", "write 0.0.0.0/0"]),
        # Karpenter pools have no per-group quota: one cluster's node limit bounds them.
        ({"cluster": KARPENTER, "nodePools": {"gpu": {"instanceTypes": ["g6.xlarge"], "maxSize": 1_000_000}}},
         "nodePools.gpu.maxSize", ["got 1000000", "5000 nodes", "at most 5000"]),
        ({"cluster": KARPENTER, "nodePools": {"p5": {"instanceTypes": ["p5.48xlarge"], "maxSize": 2000,
                                                      "availabilityZones": ["us-east-1a", "us-east-1b", "us-east-1c"]}}},
         "nodePools.p5.maxSize", ["per zone over 3 zones", "at most 1666"]),
        ({"cluster": KARPENTER, "nodePools": {"a": {"instanceTypes": ["g6.xlarge"], "maxSize": 3000},
                                              "b": {"instanceTypes": ["g6e.xlarge"], "maxSize": 3000}}},
         "nodePools", ["6004 nodes", "system group"]),
    ],
)  # fmt: skip
def test_hardened_settings_name_the_key(values, path, words):
    found = problems(values)
    assert path in found, found
    assert all(w in found[path] for w in words), found[path]


@pytest.mark.parametrize(
    "values",
    [
        {**PROD, "keys": {"deletionWindowDays": 30}, "secrets": {"recoveryWindowDays": 30}},
        {"keys": {"deletionWindowDays": 7}, "secrets": {"recoveryWindowDays": 7}},
        {"cluster": {"publicAccessCidrs": ["0.0.0.0/1", "198.51.100.0/24"]}},
        {"edge": {"allowedIngressCidrs": ["0.0.0.0/0"]}},
        {"edge": {"allowedIngressCidrs": ["0.0.0.0/0", "0.0.0.0/1"]}},
        {**PROD, "edge": {"allowedIngressCidrs": ["17.0.0.0/8", "198.51.100.0/24", "10.0.0.0/8"]}},
        {
            **PROD,
            "cluster": {
                "publicAccessCidrs": ["17.0.0.0/9", "17.128.0.0/9"],
                "privateAccess": {"cidrs": ["10.0.0.0/8"]},
            },
        },
        {"cluster": KARPENTER, "nodePools": {"inference": {"instanceTypes": ["g6.xlarge"], "maxSize": 4000}}},
    ],
)
def test_the_allowed_side_of_each_bound_passes(values):
    found = {p.path for p in load_settings_problems(values)}
    hardened = ("keys.", "secrets.", "cluster.publicAccessCidrs", "edge.allowedIngressCidrs", "nodePools")
    assert not [p for p in found if p.startswith(hardened)], found


def load_settings_problems(values):
    try:
        load(values)
    except SettingsError as err:
        return err.problems
    return ()


def test_the_auto_scaling_role_is_created_only_when_asked():
    assert load({}).keys.create_autoscaling_service_role is False
    assert load({"keys": {"createAutoscalingServiceRole": True}}).keys.create_autoscaling_service_role is True
    found = problems({"keys": {"createAutoscalingServiceRole": "maybe"}})
    assert "keys.createAutoscalingServiceRole" in found


def test_the_spot_role_is_created_only_when_asked_and_only_with_a_spot_pool():
    assert load({}).keys.create_spot_service_role is False
    spot = {"nodePools": {"inference": {"instanceTypes": ["g6.xlarge"], "capacityTypes": ["spot"]}}}
    found = {p.path for p in load_settings_problems({**spot, "keys": {"createSpotServiceRole": True}})}
    assert not [p for p in found if p.startswith("keys.")], found
    on_demand = {"nodePools": {"inference": {"instanceTypes": ["g6.xlarge"]}}}
    found = problems({**on_demand, "keys": {"createSpotServiceRole": True}})
    assert "no pool uses spot" in found["keys.createSpotServiceRole"]


def test_dev_storage_key_admits_the_spot_role_and_prod_does_not(stack_plan):
    import json

    def storage_policy(stack):
        run = stack_plan(stack).run
        (key,) = [r for r in run.resources if r.name == "keys-storage"]
        return json.dumps(key.inputs["policy"])

    assert "AWSServiceRoleForEC2Spot" in storage_policy("dev")  # dev's Karpenter pool is spot
    assert "AWSServiceRoleForEC2Spot" not in storage_policy("prod")
