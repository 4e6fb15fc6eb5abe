"""Pod Security Admission judged in the plan: each failing case is a pod the cluster would refuse."""

from __future__ import annotations

import json

import pulumi_kubernetes as k8s
import pytest

from tests.conftest import REPO, STACKS

RESTRICTED_CONTAINER = {
    "name": "app",
    "image": "example/app@sha256:" + "a" * 64,
    "securityContext": {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    },
}


def _program(level: str, container: dict, volumes: list | None = None, *, part_of: bool = True):
    def program():
        labels = {"pod-security.kubernetes.io/enforce": level}
        if part_of:
            labels["app.kubernetes.io/part-of"] = "inference-platform"
        k8s.core.v1.Namespace("ns", metadata={"name": "inference", "labels": labels})
        k8s.apps.v1.Deployment(
            "app",
            metadata={"name": "app", "namespace": "inference"},
            spec={
                "selector": {"matchLabels": {"app": "a"}},
                "template": {
                    "metadata": {"labels": {"app": "a"}},
                    "spec": {"containers": [container], "volumes": volumes or []},
                },
            },
        )

    return program


def test_a_restricted_pod_in_a_restricted_namespace_passes(violations):
    assert violations(_program("restricted", RESTRICTED_CONTAINER), "pod-security-admission") == []
    assert violations(_program("restricted", RESTRICTED_CONTAINER), "pod-security-platform-namespaces-restricted") == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"runAsNonRoot": False}, "runAsNonRoot is not true"),
        ({"runAsUser": 0}, "runAsUser is 0"),
        ({"seccompProfile": {"type": "Unconfined"}}, "seccompProfile"),
        ({"allowPrivilegeEscalation": True}, "allowPrivilegeEscalation is not false"),
        ({"capabilities": {"drop": ["NET_RAW"]}}, "capabilities.drop does not include ALL"),
        ({"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}, "adds capabilities SYS_ADMIN"),
    ],
)
def test_admission_would_refuse_each_restricted_breach(violations, change, expected):
    container = {**RESTRICTED_CONTAINER, "securityContext": {**RESTRICTED_CONTAINER["securityContext"], **change}}
    found = violations(_program("restricted", container), "pod-security-admission")
    assert any(expected in v.message for v in found), [v.message for v in found]


def test_host_path_is_refused_even_under_baseline(violations):
    volumes = [{"name": "host", "hostPath": {"path": "/var/run"}}]
    found = violations(_program("baseline", RESTRICTED_CONTAINER, volumes, part_of=False), "pod-security-admission")
    assert [v.message for v in found] == [
        "app: spec.template.spec: volume host is a hostPath (namespace 'inference' enforces 'baseline')"
    ]


def test_baseline_does_not_ask_for_restricted_fields(violations):
    plain = {"name": "app", "image": "example/app@sha256:" + "a" * 64}
    assert violations(_program("baseline", plain, part_of=False), "pod-security-admission") == []


def test_a_platform_namespace_below_restricted_is_a_violation(violations):
    found = violations(_program("baseline", RESTRICTED_CONTAINER), "pod-security-platform-namespaces-restricted")
    assert [v.message for v in found] == [
        "namespace 'inference' enforces Pod Security 'baseline'; the platform's namespaces enforce 'restricted'"
    ]
    exempt = {"exemptNamespaces": ["inference"]}
    assert violations(_program("baseline", RESTRICTED_CONTAINER), "pod-security-platform-namespaces-restricted",
                      exempt) == []  # fmt: skip


@pytest.mark.parametrize("stack", STACKS)
def test_shipped_stacks_enforce_restricted_and_their_pods_meet_it(stack, stack_plan):
    plan = stack_plan(stack)
    # The named exemptions of the stack's policy config: the metrics pipeline's namespaces (baseline for
    # the chart's pods, privileged for node-exporter: components/observability/monitoring_stack.py).
    config = json.loads((REPO / "policies" / "config" / f"{stack}.json").read_text())
    exempt = set(config["pod-security-platform-namespaces-restricted"]["exemptNamespaces"])
    assert exempt == {"monitoring", "node-exporter"}
    namespaces = [
        r
        for r in plan.run.resources
        if r.type == "kubernetes:core/v1:Namespace" and r.inputs["metadata"]["name"] not in exempt
    ]
    assert namespaces and all(
        r.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted" for r in namespaces
    )
    assert [v for v in plan.violations if v.policy.startswith("pod-security")] == []
