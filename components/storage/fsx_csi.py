"""The FSx for Lustre CSI driver and a read-only volume of the model cache for one namespace.

Only the driver's node plugin is installed: the volume is provisioned statically (the file system is
Pulumi's, not the driver's), so the controller and the IAM rights to create file systems are never
needed. The PersistentVolume is marked read-only, so every pod mounting the claim gets a read-only
Lustre mount whatever its own volumeMount says.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog.charts import Chart
from inference_platform.catalog.storage_charts import FSX_CSI_DRIVER
from inference_platform.components.common.errors import raise_if

CSI_DRIVER_NAME = "fsx.csi.aws.com"
DRIVER_NAMESPACE = "kube-system"
DEFAULT_CLAIM_NAME = "models"
DEFAULT_STORAGE_CLASS = "fsx-models"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True, kw_only=True)
class FsxCsiArgs:
    """What the FSx CSI driver and its volume need: the cluster's provider, the file system and the namespace."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    file_system_id: pulumi.Input[str]
    """Required. The model cache's file system (``fs-...``)."""
    dns_name: pulumi.Input[str]
    """Required. The file system's DNS name."""
    mount_name: pulumi.Input[str]
    """Required. The file system's Lustre mount name."""
    storage_capacity_gib: int
    """Required. The file system's size; the volume and the claim report it."""
    namespace: str
    """Required. Namespace of the claim (the inference pods' namespace)."""
    claim_name: str = DEFAULT_CLAIM_NAME
    """Default ``models``. Name of the PersistentVolumeClaim pods mount."""
    storage_class_name: str = DEFAULT_STORAGE_CLASS
    """Default ``fsx-models``. A class for statically bound model-cache volumes (nothing provisions it)."""
    install_driver: bool = True
    """Default ``True``. Install the driver's node plugin; ``False`` when the cluster already runs it."""
    chart: Chart = FSX_CSI_DRIVER
    """Default: aws-fsx-csi-driver 1.17.0 (catalog/storage_charts.py)."""


class FsxCsi(pulumi.ComponentResource):
    """The FSx for Lustre CSI driver and a read-only volume of the model cache for one namespace."""

    claim_name: str
    storage_class_name: str
    volume_name: str

    def __init__(self, name: str, args: FsxCsiArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:storage:FsxCsi", name, None, opts)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)
        depends: list[pulumi.Resource] = []
        if args.install_driver:
            depends.append(
                k8s.helm.v3.Release(
                    f"{name}-driver",
                    name="aws-fsx-csi-driver",
                    **args.chart.release_source(),
                    namespace=DRIVER_NAMESPACE,
                    values={
                        "nodeComponentOnly": True,
                        # GPU and Neuron nodes are tainted; the plugin must run wherever a model loads.
                        "node": {"tolerateAllTaints": True},
                    },
                    opts=k8s_opts,
                )
            )
        after_driver = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=depends))
        storage = f"{args.storage_capacity_gib}Gi"
        storage_class = k8s.storage.v1.StorageClass(
            f"{name}-class",
            metadata={"name": args.storage_class_name, "labels": _labels()},
            provisioner="kubernetes.io/no-provisioner",
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            opts=after_driver,
        )
        volume_name = f"{args.storage_class_name}-{args.namespace}"
        volume = k8s.core.v1.PersistentVolume(
            f"{name}-volume",
            metadata={"name": volume_name, "labels": _labels()},
            spec={
                "capacity": {"storage": storage},
                "volumeMode": "Filesystem",
                # The driver offers single- and multi-node writer modes only; read-only is enforced
                # by `csi.readOnly`, which makes the node plugin mount with `ro`.
                "accessModes": ["ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": storage_class.metadata.name,
                "claimRef": {"namespace": args.namespace, "name": args.claim_name},
                "csi": {
                    "driver": CSI_DRIVER_NAME,
                    "volumeHandle": args.file_system_id,
                    "readOnly": True,
                    "volumeAttributes": {"dnsname": args.dns_name, "mountname": args.mount_name},
                },
            },
            opts=after_driver,
        )
        k8s.core.v1.PersistentVolumeClaim(
            f"{name}-claim",
            metadata={"name": args.claim_name, "namespace": args.namespace, "labels": _labels()},
            spec={
                "accessModes": ["ReadWriteMany"],
                "storageClassName": storage_class.metadata.name,
                "volumeName": volume.metadata.name,
                "resources": {"requests": {"storage": storage}},
            },
            opts=after_driver,
        )

        self.claim_name = args.claim_name
        self.storage_class_name = args.storage_class_name
        self.volume_name = volume_name
        self.register_outputs(
            {
                "claim_name": self.claim_name,
                "storage_class_name": self.storage_class_name,
                "volume_name": self.volume_name,
            }
        )


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/part-of": "inference-platform", "app.kubernetes.io/component": "model-cache"}


def _validate(args: FsxCsiArgs) -> None:
    problems = []
    for label, value in (
        ("namespace", args.namespace),
        ("claim_name", args.claim_name),
        ("storage_class_name", args.storage_class_name),
    ):
        if not _DNS_LABEL.match(value):
            problems.append(f"{label}={value!r} is not a DNS label (lower-case letters, digits, '-')")
    if args.storage_capacity_gib <= 0:
        problems.append(f"storage_capacity_gib={args.storage_capacity_gib} must be > 0")
    raise_if("FsxCsi", problems)
