"""Node volumes on the stack's own key: every EBS volume a launch template, an EC2 instance, a managed
node group or a Karpenter EC2NodeClass creates names a customer-managed KMS key.

``encrypted: true`` alone means the account's default EBS key (``aws/ebs``), whose key policy nobody in
the stack governs and which cannot be revoked for this cluster alone. Karpenter without
``blockDeviceMappings``, a launch template without EBS mappings (the AMI's snapshot settings) and a node
group without a launch template all fall back to that key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import as_list, get

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
AWS_MANAGED_EBS_KEY = "alias/aws/ebs"


def volume_keys(resource_type: str, props: Any) -> Iterator[tuple[str, Any]]:
    """(volume, KMS key or None) for every EBS volume the resource describes; ("(default)", None) when it
    leaves the volumes to a default that uses the account's key."""
    if resource_type == LAUNCH_TEMPLATE:
        mappings = [m for m in as_list(get(props, "blockDeviceMappings")) if get(m, "ebs") is not None]
        if not mappings:
            yield "(the AMI's root volume)", None
        for bdm in mappings:
            if get(bdm, "ebs.snapshotId"):
                continue  # the snapshot's key: policies/rules/image_cache.py
            yield str(get(bdm, "deviceName", "?")), get(bdm, "ebs.kmsKeyId")
    elif resource_type == NODE_CLASS:
        mappings = [m for m in as_list(get(props, "spec.blockDeviceMappings")) if get(m, "ebs") is not None]
        if not mappings:
            yield "(Karpenter's default root volume)", None
        for bdm in mappings:
            yield str(get(bdm, "deviceName", "?")), get(bdm, "ebs.kmsKeyID")
    elif resource_type == INSTANCE:
        yield "root", get(props, "rootBlockDevice.kmsKeyId")
        for bdm in as_list(get(props, "ebsBlockDevices")):
            yield str(get(bdm, "deviceName", "?")), get(bdm, "kmsKeyId")
    elif resource_type == NODE_GROUP and get(props, "launchTemplate") is None:
        yield "(EKS's default launch template)", None


def _root_volumes_cmk(args: ResourceValidationArgs, report: ReportViolation) -> None:
    for volume, key in volume_keys(args.resource_type, args.props):
        if not key or str(key).endswith(AWS_MANAGED_EBS_KEY):
            report(
                f"EBS volume {volume} uses the account's default key; set the stack's customer-managed key "
                "(kms_key_id / kmsKeyID)"
            )


POLICIES = [
    ResourceValidationPolicy(
        name="nodes-volumes-cmk",
        description="Every node EBS volume (launch templates, instances, node groups, EC2NodeClasses) is encrypted "
        "with a customer-managed KMS key.",
        validate=_root_volumes_cmk,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
