"""Issue 28: the edge refuses a request with two Host headers, in the cluster's rendering too. The local Envoy's
refusal is shown on the real binary (tests/inferctl/serving/test_local_edge.py
test_two_host_headers_are_400_and_reach_nothing); here the cluster's Envoy Gateway object carries the same
script (catalog/edge_policy.py duplicate_credentials_lua), for every stack with an edge."""

from __future__ import annotations

import json

import pytest

from inference_platform.catalog.edge_policy import AMBIGUOUS_HOST_ERROR, duplicate_credentials_lua

EEP = "kubernetes:gateway.envoyproxy.io/v1alpha1:EnvoyExtensionPolicy"


def test_the_script_refuses_a_comma_in_authority_before_anything_else():
    script = duplicate_credentials_lua(("x-api-key", "authorization"))
    assert 'get(":authority")' in script and AMBIGUOUS_HOST_ERROR[2] in script
    assert script.index(":authority") < script.index("getNumValues")


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_cluster_rendering_carries_the_host_check(stack, stack_plan):
    policies = [r for r in stack_plan(stack).run.resources if r.type == EEP]
    scripts = [json.dumps(r.inputs) for r in policies]
    assert any(AMBIGUOUS_HOST_ERROR[2] in s and ":authority" in s for s in scripts), [r.name for r in policies]
