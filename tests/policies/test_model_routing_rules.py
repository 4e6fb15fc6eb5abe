"""Rules for several models behind one URL (policies/rules/model_routing.py): fallback Backends only in the cluster
and labelled with their model; production canaries gated by the verification Job. A passing and a failing case
each."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

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


def _canary(with_job: bool):
    def program():
        refs = [{"name": "triton", "port": 9000, "weight": 95}, {"name": "triton-v2", "port": 9000, "weight": 5}]
        k8s.apiextensions.CustomResource("r", api_version="gateway.networking.k8s.io/v1", kind="HTTPRoute",
                                         metadata={"name": "r", "namespace": "edge"},
                                         spec={"rules": [{"backendRefs": refs}]})  # fmt: skip
        if with_job:

            class Job(pulumi.ComponentResource):
                def __init__(self) -> None:
                    super().__init__("inference:verification:VerificationJob", "verification")

            Job()

    return program


def test_production_canaries_need_the_verification_job(violations):
    assert violations(_canary(True), "edge-canaries-gated", {"production": True}) == []
    assert violations(_canary(False), "edge-canaries-gated", {"production": True})
    assert violations(_canary(False), "edge-canaries-gated") == []  # development: advisory by settings alone
