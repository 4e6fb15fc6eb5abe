"""Settings added for issue 9 §4/§6: interface endpoint services, production deletion windows, world
coverage by CIDR sets, and a bound on Karpenter pools. Each bad value exits 2 naming its key."""

from __future__ import annotations

import pytest

from infra.settings import SettingsError, load_settings

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
