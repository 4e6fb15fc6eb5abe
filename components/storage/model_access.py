"""Who may touch the model store: a read-only role for inference pods, a read-write role for model sync.

Both roles are assumed through EKS Pod Identity and bound to Kubernetes service accounts. The reader
gets ``s3:GetObject`` under the model prefix, ``s3:ListBucket`` limited to that prefix and
``kms:Decrypt`` through S3; the writer adds uploads. No ``s3:*``, no ``Resource: "*"``.
EKS binds one role per service account, so other areas (secrets) add their grants to these roles
instead of creating competing ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from inference_platform.components.common.errors import raise_if
from inference_platform.components.identity.pod_identity import pod_identity_trust
from inference_platform.components.storage.documents import model_access_policy

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class ServiceAccount:
    """A Kubernetes service account, by namespace and name."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}-{self.name}"


@dataclass(frozen=True, kw_only=True)
class ModelAccessArgs:
    """What the model access roles need: the bucket, its key, the model prefix and the service accounts that read and
    write."""

    bucket_arn: pulumi.Input[str]
    """Required. The model bucket."""
    model_prefix: str
    """Required. The key prefix the roles may use (ends with ``/``)."""
    kms_key_arn: pulumi.Input[str]
    """Required. The bucket's SSE-KMS key."""
    region: str
    """Required. The key is usable only through S3 in this region."""
    cluster_name: pulumi.Input[str] | None = None
    """Default none: roles only. With a cluster, each service account below is bound to its role."""
    readers: Sequence[ServiceAccount] = field(default_factory=tuple)
    """Default none. Service accounts bound to the read-only role (inference servers)."""
    writers: Sequence[ServiceAccount] = field(default_factory=tuple)
    """Default none. Service accounts bound to the read-write role (model sync, engine builds)."""


class ModelAccess(pulumi.ComponentResource):
    """Who may touch the model store: a read-only role for inference pods, a read-write role for model sync."""

    reader_role_arn: pulumi.Output[str]
    reader_role_name: pulumi.Output[str]
    writer_role_arn: pulumi.Output[str]
    writer_role_name: pulumi.Output[str]

    def __init__(self, name: str, args: ModelAccessArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:storage:ModelAccess", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        roles: dict[str, aws.iam.Role] = {}
        for access, write, bound in (("reader", False, args.readers), ("writer", True, args.writers)):
            role = aws.iam.Role(
                f"{name}-{access}",
                description=f"Model store {'read-write' if write else 'read-only'} access for pods",
                assume_role_policy=pod_identity_trust(args.cluster_name),
                opts=child,
            )
            grant = aws.iam.RolePolicy(
                f"{name}-{access}-models",
                role=role.name,
                policy=pulumi.Output.all(args.bucket_arn, args.kms_key_arn).apply(
                    lambda v, _write=write: json.dumps(  # type: ignore[misc]  # mypy infers no default-bound lambda
                        model_access_policy(v[0], args.model_prefix, v[1], args.region, write=_write)
                    )
                ),
                opts=child,
            )
            if args.cluster_name is not None:
                for account in bound:
                    aws.eks.PodIdentityAssociation(
                        f"{name}-{access}-{account.key}",
                        cluster_name=args.cluster_name,
                        namespace=account.namespace,
                        service_account=account.name,
                        role_arn=role.arn,
                        # Bound last: a pod must never receive the role before its permissions exist.
                        opts=pulumi.ResourceOptions(parent=self, depends_on=[grant]),
                    )
            roles[access] = role

        self.reader_role_arn = roles["reader"].arn
        self.reader_role_name = roles["reader"].name
        self.writer_role_arn = roles["writer"].arn
        self.writer_role_name = roles["writer"].name
        self.register_outputs(
            {
                "reader_role_arn": self.reader_role_arn,
                "reader_role_name": self.reader_role_name,
                "writer_role_arn": self.writer_role_arn,
                "writer_role_name": self.writer_role_name,
            }
        )


def _validate(args: ModelAccessArgs) -> None:
    problems = []
    if not args.model_prefix.endswith("/") or args.model_prefix.startswith("/"):
        problems.append(f"model_prefix={args.model_prefix!r} must end with '/' and not start with '/'")
    accounts = [*args.readers, *args.writers]
    for account in accounts:
        for label in (account.namespace, account.name):
            if not _DNS_LABEL.match(label):
                problems.append(f"service account {account.namespace}/{account.name}: {label!r} is not a DNS label")
    seen = [a.key for a in accounts]
    dupes = sorted({k for k in seen if seen.count(k) > 1})
    if dupes:
        # EKS accepts one Pod Identity association per service account.
        problems.append(f"service accounts bound twice: {', '.join(dupes)}")
    if accounts and args.cluster_name is None:
        problems.append("readers/writers given without cluster_name: nothing could bind them")
    raise_if("ModelAccess", problems)
