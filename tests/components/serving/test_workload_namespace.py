"""Workload namespaces: Pod Security labels, service accounts without API tokens, valid manifests."""

from __future__ import annotations

import kubernetes_validate
import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.serving.workload_namespace import WorkloadNamespace, WorkloadNamespaceArgs
from inference_platform.offline_plan.manifests import is_object, manifest
from tests.conftest import one

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"


def test_namespace_and_service_accounts(run_components):
    def program():
        provider = k8s.Provider("k8s", kubeconfig=KUBECONFIG)
        WorkloadNamespace(
            "w", WorkloadNamespaceArgs(k8s_provider=provider, namespace="inference", service_accounts=["triton"])
        )

    resources = run_components(program).resources
    namespace = one(resources, "w-namespace")
    labels = namespace.inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    account = one(resources, "w-triton")
    assert account.inputs["metadata"] == {
        "name": "triton",
        "namespace": "inference",
        "labels": {"app.kubernetes.io/part-of": "inference-platform"},
    }
    assert account.inputs["automountServiceAccountToken"] is False
    assert namespace.urn in account.dependencies
    for r in resources:
        if is_object(r):
            kubernetes_validate.validate(manifest(r), "1.33", strict=True)


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        WorkloadNamespace(
            "w",
            WorkloadNamespaceArgs(
                k8s_provider=None,
                namespace="Inference",
                service_accounts=["a", "a"],
                enforce="lax",
                labels={"pod-security.kubernetes.io/enforce": "privileged"},
            ),
        )
    text = str(err.value)
    for expected in ("'Inference'", "repeats a name", "enforce='lax'", "set from enforce"):
        assert expected in text
