"""Every Kubernetes manifest `make plan` writes validates: built-in kinds against the Kubernetes OpenAPI
schema in strict mode (the cluster's version and 1.33), custom resources by apiVersion, kind and the
fields their CRDs require."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from inference_platform.offline_plan.manifests import write_manifests
from tests.conftest import STACKS

VERSIONS = ("1.36", "1.33")
# Fields the CRDs mark required (karpenter-provider-aws pkg/apis/crds at v1.14.1), as dotted paths.
CUSTOM_REQUIRED = {
    ("karpenter.sh/v1", "NodePool"): ("spec.template.spec.nodeClassRef.name", "spec.template.spec.requirements"),
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): (
        "spec.role",
        "spec.amiSelectorTerms",
        "spec.subnetSelectorTerms",
        "spec.securityGroupSelectorTerms",
    ),
    # keda.sh_scaledobjects.yaml of KEDA 2.20: spec requires scaleTargetRef (with name) and triggers.
    ("keda.sh/v1alpha1", "ScaledObject"): ("spec.scaleTargetRef.name", "spec.triggers"),
}
# The edge's custom resources (Gateway API, Envoy Gateway, the ALB controller's IngressClassParams) have
# their required fields checked in tests/infra/test_edge_stacks.py.
CUSTOM_GROUPS = ("karpenter.sh/", "karpenter.k8s.aws/", "secrets-store.csi.x-k8s.io/",
                 "monitoring.coreos.com/", "leaderworkerset.x-k8s.io/", "keda.sh/",
                 "gateway.networking.k8s.io/", "gateway.envoyproxy.io/", "elbv2.k8s.aws/")  # fmt: skip


def dig(doc, path):
    for part in path.split("."):
        doc = doc[part]
    return doc


@pytest.mark.parametrize("stack", STACKS)
def test_every_manifest_validates(stack_plan, stack, tmp_path):
    written = write_manifests(stack_plan(stack).run.resources, tmp_path)
    assert written
    seen_custom = set()
    for path in written:
        doc = yaml.safe_load(path.read_text())
        assert doc["metadata"]["name"], path.name
        if doc["apiVersion"].startswith(CUSTOM_GROUPS):
            key = (doc["apiVersion"], doc["kind"])
            seen_custom.add(key)
            for field in CUSTOM_REQUIRED.get(key, ()):
                assert dig(doc, field), f"{path.name}: {field} is required"
            continue
        for version in VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
    if stack == "dev":  # the Karpenter stack
        assert set(CUSTOM_REQUIRED) <= seen_custom


def test_a_broken_manifest_is_caught():
    bad = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "x"}, "provisioner": "p",
           "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete", "unknownField": 1}  # fmt: skip
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, "1.36", strict=True)
