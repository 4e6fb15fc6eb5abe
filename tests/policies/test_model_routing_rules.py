"""Rules for several models behind one URL (policies/rules/model_routing.py): fallback Backends only in the cluster
and labelled with their model; production canaries gated by the verification Job. A passing and a failing case
each."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

SERVICE = "triton.inference.svc.cluster.local"


def _backend(host: str | None, labels: dict | None = None, ip: str | None = None):
    def program():
        endpoint = {"fqdn": {"hostname": host, "port": 9000}} if host else {"ip": {"address": ip, "port": 9000}}
        k8s.apiextensions.CustomResource("b", api_version="gateway.envoyproxy.io/v1alpha1", kind="Backend",
                                         metadata={"name": "b", "namespace": "edge", "labels": labels or {}},
                                         spec={"endpoints": [endpoint], "fallback": True})  # fmt: skip

    return program


def test_fallback_backends_in_the_cluster_and_labelled_pass(violations):
    assert (
        violations(_backend(SERVICE, {"inference.platform/model": "Llama-3.1-8B"}), "edge-fallback-backends-in-cluster")
        == []
    )


def test_outside_or_unlabelled_fallbacks_fail(violations):
    label = {"inference.platform/model": "m"}
    assert violations(_backend("api.example.com", label), "edge-fallback-backends-in-cluster")
    assert violations(_backend(None, label, ip="10.0.0.1"), "edge-fallback-backends-in-cluster")
    found = violations(_backend(SERVICE), "edge-fallback-backends-in-cluster")
    assert found and "label" in found[0].message


WEIGHTED = [{"backendRefs": [{"name": "triton", "port": 9000, "weight": 95},
                              {"name": "triton-v2", "port": 9000, "weight": 5}]}]  # fmt: skip


def _matching(*headers: tuple[str, str]) -> list[dict]:
    return [{"path": {"type": "Exact", "value": "/v1/chat/completions"},
             "headers": [{"type": "Exact", "name": n, "value": v} for n, v in headers]}]  # fmt: skip


# As the canary renders (components/edge/model_routing.py): the script draws the share into the tester header.
DRAWN = [
    {"matches": _matching(("x-inference-model", "m"), ("x-canary", "always")),
     "backendRefs": [{"name": "triton-v2", "port": 9000, "weight": 1}]},
    {"matches": _matching(("x-inference-model", "m")), "backendRefs": [{"name": "triton", "port": 9000, "weight": 1}]},
]  # fmt: skip
# Two models, one Service each: no canary.
TWO_MODELS = [
    {"matches": _matching(("x-inference-model", "a")), "backendRefs": [{"name": "triton", "port": 9000}]},
    {"matches": _matching(("x-inference-model", "b")), "backendRefs": [{"name": "triton-b", "port": 9000}]},
]  # fmt: skip


def _canary(with_job: bool, rules: list[dict] = WEIGHTED):
    def program():
        k8s.apiextensions.CustomResource("r", api_version="gateway.networking.k8s.io/v1", kind="HTTPRoute",
                                         metadata={"name": "r", "namespace": "edge"},
                                         spec={"rules": rules})  # fmt: skip
        if with_job:

            class Job(pulumi.ComponentResource):
                def __init__(self) -> None:
                    super().__init__("inference:verification:VerificationJob", "verification")

            Job()

    return program


@pytest.mark.parametrize("rules", [WEIGHTED, DRAWN], ids=["weighted", "drawn"])
def test_production_canaries_need_the_verification_job(violations, rules):
    assert violations(_canary(True, rules), "edge-canaries-gated", {"production": True}) == []
    found = violations(_canary(False, rules), "edge-canaries-gated", {"production": True})
    assert found and "triton, triton-v2" in found[0].message
    assert violations(_canary(False, rules), "edge-canaries-gated") == []  # development: advisory by settings alone


def test_two_models_are_no_canary(violations):
    assert violations(_canary(False, TWO_MODELS), "edge-canaries-gated", {"production": True}) == []
