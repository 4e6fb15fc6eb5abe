"""FSx for Lustre in front of the model bucket: GPUs load weights at file-system speed, not S3 speed.

A PERSISTENT_2 file system, encrypted with the storage key, linked to the bucket's model prefix by a
data repository association that imports new and changed objects on its own. The bucket stays the
system of record: nothing is exported back, so the file system is a cache that import can rebuild.
Lustre clients and servers talk on TCP 988 and 1018-1023; the file system's group admits those ports
from the node group and from itself (its own servers) only, and the node group admits the replies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from inference_platform.catalog import lustre
from inference_platform.components.common.errors import raise_if

DEFAULT_STORAGE_CAPACITY_GIB = 1200
DEFAULT_PER_UNIT_THROUGHPUT = 250
DEFAULT_FILE_SYSTEM_PATH = "/models"
DEFAULT_AUTO_IMPORT_EVENTS: tuple[str, ...] = ("NEW", "CHANGED")
DEFAULT_LOG_RETENTION_DAYS = 90
DEPLOYMENT_TYPE = "PERSISTENT_2"
LUSTRE_VERSION = "2.15"
IMPORT_EVENTS = ("NEW", "CHANGED", "DELETED")
# FSx reads SSE-KMS objects of a linked bucket as this service-linked role (one per file system).
S3_ACCESS_ROLE_PATH = "aws-service-role/s3.data-source.lustre.fsx.amazonaws.com"
S3_ACCESS_ROLE_PREFIX = "AWSServiceRoleForFSxS3Access_"
# FSx accepts log groups under this prefix only.
LOG_GROUP_PREFIX = "/aws/fsx/"


@dataclass(frozen=True, kw_only=True)
class ModelCacheArgs:
    """What the model cache needs: the bucket, network, key, capacity and throughput."""

    name_prefix: str
    """Required. Names the security group and the log group."""
    account_id: str
    """Required. Account of the service-linked role granted the storage key."""
    partition: str = "aws"
    """Default ``aws``. ARN partition."""
    vpc_id: pulumi.Input[str]
    """Required."""
    subnet_id: pulumi.Input[str]
    """Required. One private subnet: a PERSISTENT_2 file system lives in one zone."""
    node_security_group_id: pulumi.Input[str]
    """Required. The only clients: the inference nodes."""
    kms_key_arn: pulumi.Input[str]
    """Required. Encrypts the file system and the bucket's objects (the stack's storage key)."""
    log_kms_key_arn: pulumi.Input[str]
    """Required. Encrypts the file system's event log group (the stack's logs key)."""
    bucket_name: pulumi.Input[str]
    """Required. The model bucket to link."""
    bucket_arn: pulumi.Input[str]
    """Required. Scopes the key grant to this bucket's objects."""
    model_prefix: str
    """Required. The bucket prefix the file system mirrors (ends with ``/``)."""
    storage_capacity_gib: int = DEFAULT_STORAGE_CAPACITY_GIB
    """Default 1200. 1200 or a multiple of 2400 GiB."""
    per_unit_storage_throughput: int = DEFAULT_PER_UNIT_THROUGHPUT
    """Default 250. MB/s per TiB: 125, 250, 500 or 1000."""
    file_system_path: str = DEFAULT_FILE_SYSTEM_PATH
    """Default ``/models``. Where the prefix appears in the file system."""
    auto_import_events: Sequence[str] = field(default_factory=lambda: DEFAULT_AUTO_IMPORT_EVENTS)
    """Default NEW and CHANGED. Subset of NEW, CHANGED, DELETED imported without an import task."""
    log_retention_days: int = DEFAULT_LOG_RETENTION_DAYS
    """Default 90. Days data-repository warnings and errors are kept."""
    protect: bool = False
    """Default ``False``. Protect and retain the file system (production)."""


class ModelCache(pulumi.ComponentResource):
    """FSx for Lustre in front of the model bucket: GPUs load weights at file-system speed, not S3 speed."""

    file_system_id: pulumi.Output[str]
    dns_name: pulumi.Output[str]
    mount_name: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    file_system_path: str
    storage_capacity_gib: int

    def __init__(self, name: str, args: ModelCacheArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:storage:ModelCache", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)

        group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description="FSx for Lustre model cache",
            tags={"Name": f"{args.name_prefix}-model-cache", "network-role": "fsx"},
            opts=child,
        )
        sources = {"nodes": args.node_security_group_id, "self": group.id}
        for label, (low, high) in _port_ranges().items():
            for source, source_group in sources.items():
                aws.vpc.SecurityGroupIngressRule(
                    f"{name}-{label}-from-{source}",
                    security_group_id=group.id,
                    referenced_security_group_id=source_group,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    description=f"Lustre {label} ({low}-{high}) from the {source} security group",
                    opts=child,
                )
                aws.vpc.SecurityGroupEgressRule(
                    f"{name}-{label}-to-{source}",
                    security_group_id=group.id,
                    referenced_security_group_id=source_group,
                    ip_protocol="tcp",
                    from_port=low,
                    to_port=high,
                    description=f"Lustre {label} ({low}-{high}) to the {source} security group",
                    opts=child,
                )
            # Lustre servers open connections back to their clients.
            aws.vpc.SecurityGroupIngressRule(
                f"{name}-nodes-{label}-from-fsx",
                security_group_id=args.node_security_group_id,
                referenced_security_group_id=group.id,
                ip_protocol="tcp",
                from_port=low,
                to_port=high,
                description=f"Lustre {label} ({low}-{high}) from the model cache",
                opts=child,
            )

        logs = aws.cloudwatch.LogGroup(
            f"{name}-logs",
            name=f"{LOG_GROUP_PREFIX}{args.name_prefix}-model-cache",
            kms_key_id=args.log_kms_key_arn,
            retention_in_days=args.log_retention_days,
            opts=child,
        )
        stateful = pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect)
        file_system = aws.fsx.LustreFileSystem(
            f"{name}-fs",
            deployment_type=DEPLOYMENT_TYPE,
            file_system_type_version=LUSTRE_VERSION,
            storage_type="SSD",
            storage_capacity=args.storage_capacity_gib,
            per_unit_storage_throughput=args.per_unit_storage_throughput,
            subnet_ids=args.subnet_id,
            security_group_ids=[group.id],
            kms_key_id=args.kms_key_arn,
            # The bucket is the system of record and the file system only mirrors it: a backup would
            # pay twice for data S3 already keeps in versions.
            automatic_backup_retention_days=0,
            skip_final_backup=True,
            log_configuration={"level": "WARN_ERROR", "destination": logs.arn},
            tags={"Name": f"{args.name_prefix}-model-cache"},
            opts=stateful,
        )
        link = aws.fsx.DataRepositoryAssociation(
            f"{name}-link",
            file_system_id=file_system.id,
            file_system_path=args.file_system_path,
            data_repository_path=pulumi.Output.concat("s3://", args.bucket_name, "/", args.model_prefix),
            batch_import_meta_data_on_create=True,
            # Unlinking must never delete what was imported while pods may be reading it.
            delete_data_in_filesystem=False,
            s3={"auto_import_policy": {"events": list(args.auto_import_events)}},
            opts=child,
        )
        # FSx creates its S3 service-linked role with the association; only then can the key be granted
        # to it. A grant names the role exactly and leaves the key policy (owned by Keys) untouched.
        aws.kms.Grant(
            f"{name}-s3-import",
            key_id=args.kms_key_arn,
            grantee_principal=file_system.id.apply(
                lambda fs_id: (
                    f"arn:{args.partition}:iam::{args.account_id}:role/{S3_ACCESS_ROLE_PATH}/"
                    f"{S3_ACCESS_ROLE_PREFIX}{fs_id}"
                )
            ),
            operations=["Decrypt"],
            # With S3 bucket keys the encryption context is the bucket ARN: this bucket's objects only.
            constraints=[{"encryption_context_subset": {"aws:s3:arn": args.bucket_arn}}],
            retire_on_delete=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[link]),
        )

        self.file_system_id = file_system.id
        self.dns_name = file_system.dns_name
        self.mount_name = file_system.mount_name
        self.security_group_id = group.id
        self.file_system_path = args.file_system_path
        self.storage_capacity_gib = args.storage_capacity_gib
        self.register_outputs(
            {
                "file_system_id": self.file_system_id,
                "dns_name": self.dns_name,
                "mount_name": self.mount_name,
                "security_group_id": self.security_group_id,
                "file_system_path": self.file_system_path,
                "storage_capacity_gib": self.storage_capacity_gib,
            }
        )


def _port_ranges() -> dict[str, tuple[int, int]]:
    return {"lnet": (lustre.LNET_PORT, lustre.LNET_PORT), "clients": lustre.CLIENT_PORT_RANGE}


def _validate(args: ModelCacheArgs) -> None:
    problems = []
    for problem in (
        lustre.throughput_problem(DEPLOYMENT_TYPE, args.per_unit_storage_throughput),
        lustre.capacity_problem(args.storage_capacity_gib),
    ):
        if problem:
            problems.append(problem)
    path = args.file_system_path
    if not path.startswith("/") or path == "/" or path.endswith("/"):
        problems.append(f"file_system_path={path!r} must be an absolute path below '/' without a trailing '/'")
    events = list(args.auto_import_events)
    if not events or len(set(events)) != len(events) or any(e not in IMPORT_EVENTS for e in events):
        problems.append(f"auto_import_events={events}: distinct values from {', '.join(IMPORT_EVENTS)}")
    if not args.model_prefix.endswith("/") or args.model_prefix.startswith("/"):
        problems.append(f"model_prefix={args.model_prefix!r} must end with '/' and not start with '/'")
    if args.log_retention_days <= 0:
        problems.append(f"log_retention_days={args.log_retention_days} must be > 0")
    raise_if("ModelCache", problems)
