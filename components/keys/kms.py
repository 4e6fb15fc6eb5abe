"""KMS customer-managed keys, one per purpose: cluster secrets, storage and logs.

Separate keys keep blast radius small: revoking the logs key never locks model storage. Rotation is
always on; the deletion window is the only recovery from a mistaken deletion, so production uses
AWS's maximum.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

PURPOSES: tuple[str, ...] = ("cluster", "storage", "logs")
DEFAULT_DELETION_WINDOW_DAYS = 30
AUTOSCALING_SERVICE = "autoscaling.amazonaws.com"
AUTOSCALING_ROLE_NAME = "AWSServiceRoleForAutoScaling"
SERVICE_ROLE_MARKER = "inference-platform/created-by"
"""Tag on a service-linked role this project created: its value is the stack's alias prefix (``<project>-<stack>``),
so a later run can tell its own role from one the account already had (infra/foundation.py)."""
# EC2 Spot launches instances through its own service-linked role, which must be admitted to the key of
# CMK-encrypted volumes or the instances terminate at launch (aws/karpenter-provider-aws #933, #1407).
SPOT_SERVICE = "spot.amazonaws.com"
DEFAULT_ROTATION_PERIOD_DAYS = 365

# Administration only: admins can manage and schedule deletion but never use key material.
KEY_ADMIN_ACTIONS: tuple[str, ...] = (
    "kms:Create*", "kms:Describe*", "kms:Enable*", "kms:List*", "kms:Put*", "kms:Update*",
    "kms:Revoke*", "kms:Disable*", "kms:Get*", "kms:Delete*", "kms:TagResource", "kms:UntagResource",
    "kms:ScheduleKeyDeletion", "kms:CancelKeyDeletion", "kms:RotateKeyOnDemand",
)  # fmt: skip
LOGS_SERVICE_ACTIONS: tuple[str, ...] = (
    "kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*",
)  # fmt: skip
# What a service-linked role needs to launch instances whose EBS volumes use the key (EC2 Auto Scaling
# user guide, "Required AWS KMS key policy for use with encrypted volumes").
VOLUME_SERVICE_ACTIONS: tuple[str, ...] = (
    "kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey",
)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class KeysArgs:
    """What the stack's KMS keys need: alias prefix, account, region, administrators, the roles that use volume keys,
    deletion and rotation."""

    alias_prefix: str
    """Required. Aliases are ``alias/<alias_prefix>/<purpose>``; use a per-stack prefix."""
    account_id: str
    """Required. The account whose root principal owns the keys (IAM policies then delegate)."""
    partition: str = "aws"
    """Default ``aws``. ARN partition (``aws``, ``aws-us-gov``, ``aws-cn``)."""
    region: str
    """Required. Region of the CloudWatch Logs service allowed to use the logs key."""
    admin_role_arns: Sequence[str] = field(default_factory=tuple)
    """Default none. Roles allowed to administer (not use) the keys."""
    volume_service_role_arns: Sequence[str] = field(default_factory=tuple)
    """Default none. Service-linked roles that launch instances with volumes encrypted by the storage key:
    EC2 Auto Scaling's ``AWSServiceRoleForAutoScaling`` for managed node groups, EC2 Spot's
    ``AWSServiceRoleForEC2Spot`` when any pool uses spot capacity. A service-linked role
    takes no IAM policy, so only the key policy can let it use the key; KMS refuses a key policy naming
    a role that does not exist yet."""
    create_autoscaling_service_role: bool = False
    """Default ``False``. Create EC2 Auto Scaling's service-linked role first, for an account that never had
    an Auto Scaling group (KMS refuses a key policy naming a role that does not exist; terraform-provider-aws
    #28644). Never where it exists: IAM refuses a second one. Retained on destroy: the role is the account's."""
    create_spot_service_role: bool = False
    """Default ``False``. Create EC2 Spot's service-linked role (``AWSServiceRoleForEC2Spot``) first, for an
    account that never launched a Spot instance and whose storage key policy names it (spot capacity).
    Never where it exists: IAM refuses a second one. Retained on destroy: the role is the account's."""
    deletion_window_days: int = DEFAULT_DELETION_WINDOW_DAYS
    """Default 30. 7-30 days between ScheduleKeyDeletion and the key being gone."""
    rotation_period_days: int = DEFAULT_ROTATION_PERIOD_DAYS
    """Default 365. Automatic rotation period, 90-2560 days."""
    protect: bool = False
    """Default ``False``. Protect and retain the keys (production): `pulumi destroy` must not remove them."""


class Keys(pulumi.ComponentResource):
    """The stack's customer-managed keys and their aliases."""

    cluster_key_arn: pulumi.Output[str]
    storage_key_arn: pulumi.Output[str]
    logs_key_arn: pulumi.Output[str]

    def __init__(self, name: str, args: KeysArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference:keys:Keys", name, None, opts)
        self.keys: dict[str, aws.kms.Key] = {}
        after: list[pulumi.Resource] = []
        if args.create_autoscaling_service_role:
            after.append(
                aws.iam.ServiceLinkedRole(
                    f"{name}-autoscaling-service-role",
                    aws_service_name=AUTOSCALING_SERVICE,
                    description="EC2 Auto Scaling (managed node groups); its key-policy grant is on the storage key",
                    tags={SERVICE_ROLE_MARKER: args.alias_prefix},
                    opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
                )
            )
        if args.create_spot_service_role:
            after.append(
                aws.iam.ServiceLinkedRole(
                    f"{name}-spot-service-role",
                    aws_service_name=SPOT_SERVICE,
                    description="EC2 Spot (spot node pools); its key-policy grant is on the storage key",
                    opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
                )
            )
        stateful = pulumi.ResourceOptions(
            parent=self, protect=args.protect, retain_on_delete=args.protect, depends_on=after
        )
        for purpose in PURPOSES:
            key = aws.kms.Key(
                f"{name}-{purpose}",
                description=f"{args.alias_prefix} {purpose} encryption",
                enable_key_rotation=True,
                rotation_period_in_days=args.rotation_period_days,
                deletion_window_in_days=args.deletion_window_days,
                policy=json.dumps(key_policy(purpose, args)),
                opts=stateful,
            )
            aws.kms.Alias(
                f"{name}-{purpose}-alias",
                name=f"alias/{args.alias_prefix}/{purpose}",
                target_key_id=key.key_id,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.keys[purpose] = key
        self.cluster_key_arn = self.keys["cluster"].arn
        self.storage_key_arn = self.keys["storage"].arn
        self.logs_key_arn = self.keys["logs"].arn
        self.register_outputs(
            {
                "cluster_key_arn": self.cluster_key_arn,
                "storage_key_arn": self.storage_key_arn,
                "logs_key_arn": self.logs_key_arn,
            }
        )


def autoscaling_service_role_arn(partition: str, account_id: str) -> str:
    """EC2 Auto Scaling's default service-linked role, which launches managed node groups' instances.
    AWS creates it with an account's first Auto Scaling group; a new account creates it once with
    ``aws iam create-service-linked-role --aws-service-name autoscaling.amazonaws.com`` (or sets
    ``create_autoscaling_service_role``)."""
    return f"arn:{partition}:iam::{account_id}:role/aws-service-role/{AUTOSCALING_SERVICE}/{AUTOSCALING_ROLE_NAME}"


def spot_service_role_arn(partition: str, account_id: str) -> str:
    """EC2 Spot's service-linked role, which launches Spot instances (Karpenter's spot nodes, managed spot
    node groups). AWS creates it with an account's first Spot request from the console; Karpenter's
    controller policy has no ``iam:CreateServiceLinkedRole``, so a new account creates it once with
    ``aws iam create-service-linked-role --aws-service-name spot.amazonaws.com`` (or sets
    ``create_spot_service_role``)."""
    return f"arn:{partition}:iam::{account_id}:role/aws-service-role/{SPOT_SERVICE}/AWSServiceRoleForEC2Spot"


def key_policy(purpose: str, args: KeysArgs) -> dict[str, Any]:
    """The key policy for one purpose. Every principal is named: no ``"*"`` principals anywhere."""
    root = f"arn:{args.partition}:iam::{args.account_id}:root"
    statements: list[dict[str, Any]] = [
        {
            # Lets IAM policies in this account grant use of the key (AWS's default key policy).
            "Sid": "EnableIamPolicies",
            "Effect": "Allow",
            "Principal": {"AWS": root},
            "Action": "kms:*",
            "Resource": "*",
        }
    ]
    if args.admin_role_arns:
        statements.append(
            {
                "Sid": "AllowKeyAdministration",
                "Effect": "Allow",
                "Principal": {"AWS": sorted(args.admin_role_arns)},
                "Action": list(KEY_ADMIN_ACTIONS),
                "Resource": "*",
            }
        )
    if purpose == "storage" and args.volume_service_role_arns:
        roles = sorted(args.volume_service_role_arns)
        statements += [
            {
                "Sid": "AllowServiceLinkedRoleUseForVolumes",
                "Effect": "Allow",
                "Principal": {"AWS": roles},
                "Action": list(VOLUME_SERVICE_ACTIONS),
                "Resource": "*",
            },
            {
                # Grants only for AWS resources: the role can hand EBS the key for a volume, nothing else.
                "Sid": "AllowServiceLinkedRoleGrantsForVolumes",
                "Effect": "Allow",
                "Principal": {"AWS": roles},
                "Action": "kms:CreateGrant",
                "Resource": "*",
                "Condition": {"Bool": {"kms:GrantIsForAWSResource": "true"}},
            },
        ]
    if purpose == "logs":
        log_groups = f"arn:{args.partition}:logs:{args.region}:{args.account_id}:log-group:*"
        statements.append(
            {
                # Scoped by encryption context: only this account's log groups in this region.
                "Sid": "AllowCloudWatchLogs",
                "Effect": "Allow",
                "Principal": {"Service": f"logs.{args.region}.amazonaws.com"},
                "Action": list(LOGS_SERVICE_ACTIONS),
                "Resource": "*",
                "Condition": {"ArnLike": {"kms:EncryptionContext:aws:logs:arn": log_groups}},
            }
        )
    return {"Version": "2012-10-17", "Id": f"{args.alias_prefix}-{purpose}", "Statement": statements}
