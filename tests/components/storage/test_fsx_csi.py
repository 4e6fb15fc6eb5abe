"""FSx CSI driver (node plugin only, pinned chart) and the statically bound read-only model volume."""

from __future__ import annotations

import kubernetes_validate
import pulumi
import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog.storage_charts import FSX_CSI_DRIVER
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.storage.fsx_csi import FsxCsi, FsxCsiArgs
from inference_platform.offline_plan.manifests import is_object, manifest
from tests.conftest import by_type, one

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"


def provider() -> k8s.Provider:
    return k8s.Provider("k8s", kubeconfig=KUBECONFIG)


def fsx_args(k8s_provider: pulumi.ProviderResource, **overrides) -> FsxCsiArgs:
    values = dict(
        k8s_provider=k8s_provider,
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        storage_capacity_gib=2400,
        namespace="inference",
    )
    values.update(overrides)
    return FsxCsiArgs(**values)


@pytest.fixture
def volume(run_components):
    return run_components(lambda: FsxCsi("fsx", fsx_args(provider()))).resources


def test_only_the_node_plugin_of_the_pinned_chart_is_installed_on_every_node(volume):
    release = one(volume, "fsx-driver").inputs
    assert (release["chart"], release["version"], release["repositoryOpts"]["repo"]) == (
        "aws-fsx-csi-driver",
        "1.17.0",
        "https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
    )
    assert FSX_CSI_DRIVER.version == "1.17.0"
    assert release["namespace"] == "kube-system" and release["values"]["nodeComponentOnly"] is True
    assert release["values"]["node"]["tolerateAllTaints"] is True


def test_the_volume_is_the_file_system_mounted_read_only_and_bound_to_one_claim(volume):
    pv = one(volume, "fsx-volume").inputs["spec"]
    assert pv["csi"] == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-0123456789abcdef0",
        "readOnly": True,
        "volumeAttributes": {"dnsname": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com", "mountname": "abcdefgh"},
    }
    assert pv["persistentVolumeReclaimPolicy"] == "Retain" and pv["capacity"] == {"storage": "2400Gi"}
    assert pv["claimRef"] == {"namespace": "inference", "name": "models"}
    claim = one(volume, "fsx-claim").inputs
    assert claim["metadata"]["namespace"] == "inference" and claim["metadata"]["name"] == "models"
    assert claim["spec"]["volumeName"] == one(volume, "fsx-volume").inputs["metadata"]["name"]
    assert claim["spec"]["storageClassName"] == pv["storageClassName"] == "fsx-models"
    assert one(volume, "fsx-class").inputs["provisioner"] == "kubernetes.io/no-provisioner"


def test_every_object_uses_the_cluster_provider_and_waits_for_the_driver(volume):
    driver = one(volume, "fsx-driver").urn
    for r in volume:
        if r.type.startswith("kubernetes:"):
            assert r.provider and r.provider.endswith("::k8s"), r.urn
            if r.name != "fsx-driver":
                assert driver in r.dependencies, r.urn


def test_manifests_validate_against_kubernetes_1_33(volume):
    objects = [r for r in volume if is_object(r)]
    assert {r.type.rsplit(":", 1)[-1] for r in objects} == {"StorageClass", "PersistentVolume", "PersistentVolumeClaim"}
    for r in objects:
        kubernetes_validate.validate(manifest(r), "1.33", strict=True)


def test_a_cluster_running_the_driver_already_gets_no_release(run_components):
    resources = run_components(lambda: FsxCsi("fsx", fsx_args(provider(), install_driver=False))).resources
    assert by_type(resources, "kubernetes:helm.sh/v3:Release") == []
    assert len(by_type(resources, "kubernetes:core/v1:PersistentVolume")) == 1


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        FsxCsi("fsx", fsx_args(None, namespace="Inference", claim_name="", storage_capacity_gib=0))
    text = str(err.value)
    assert "namespace='Inference'" in text and "claim_name=''" in text and "storage_capacity_gib=0" in text
