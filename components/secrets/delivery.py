"""Delivers chosen Secrets Manager secrets to the pods of one service account, as files.

Two halves that must agree: the workload's Pod Identity role gets read access to exactly these
secrets (and their key, through Secrets Manager only), and a SecretProviderClass in the workload's
namespace tells the CSI driver which secrets to mount under which file names. A pod mounts them with
a ``csi`` volume (driver ``secrets-store.csi.k8s.io``, ``secretProviderClass: <class_name>``): no
secret value appears in any manifest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import yaml

from inference_platform.components.common.errors import raise_if
from inference_platform.components.storage.documents import secret_read_policy

API_VERSION = "secrets-store.csi.x-k8s.io/v1"
KIND = "SecretProviderClass"
CSI_DRIVER_NAME = "secrets-store.csi.k8s.io"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_FILE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,255}$")


@dataclass(frozen=True, kw_only=True)
class SecretDeliveryArgs:
    """What a secret delivery needs: the cluster's provider, the service account and its role, the secret files and
    their key."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    namespace: str
    """Required. The workload's namespace (the class is namespaced)."""
    service_account: str
    """Required. The workload's service account; names the class ``<service_account>-secrets``."""
    role_name: pulumi.Input[str]
    """Required. The IAM role Pod Identity binds to that service account (granted read here)."""
    files: Mapping[str, pulumi.Input[str]]
    """Required, not empty. File name in the mount -> secret ARN."""
    kms_key_arn: pulumi.Input[str]
    """Required. The key the secrets are encrypted with."""
    region: str
    """Required. Region of the secrets."""


class SecretDelivery(pulumi.ComponentResource):
    """Chosen Secrets Manager secrets delivered to the pods of one service account, as files."""

    class_name: str
    """The SecretProviderClass pods name in their ``csi`` volume."""
    file_names: list[str]

    def __init__(self, name: str, args: SecretDeliveryArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:secrets:SecretDelivery", name, None, opts)
        names = sorted(args.files)
        arns = pulumi.Output.all(*(args.files[n] for n in names))
        aws.iam.RolePolicy(
            f"{name}-read",
            role=args.role_name,
            policy=pulumi.Output.all(arns, args.kms_key_arn).apply(
                lambda v: json.dumps(secret_read_policy(v[0], v[1], args.region))
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.class_name = f"{args.service_account}-secrets"
        k8s.apiextensions.CustomResource(
            f"{name}-class",
            api_version=API_VERSION,
            kind=KIND,
            metadata={
                "name": self.class_name,
                "namespace": args.namespace,
                "labels": {"app.kubernetes.io/part-of": "inference-platform"},
            },
            spec={
                "provider": "aws",
                "parameters": {
                    "objects": arns.apply(lambda values: provider_objects(dict(zip(names, values, strict=True)))),
                    "region": args.region,
                    "usePodIdentity": "true",
                },
            },
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider),
        )
        self.file_names = names
        self.register_outputs({"class_name": self.class_name, "file_names": self.file_names})


def provider_objects(files: Mapping[str, str]) -> str:
    """The AWS provider's ``objects`` parameter: a YAML list, one Secrets Manager object per file.

    Objects are named by ARN (unambiguous across regions and name prefixes) and aliased to the file name.
    """
    objects = [
        {"objectName": arn, "objectType": "secretsmanager", "objectAlias": file_name}
        for file_name, arn in sorted(files.items())
    ]
    return yaml.safe_dump(objects, sort_keys=False)


def _validate(args: SecretDeliveryArgs) -> None:
    problems = []
    for label, value in (("namespace", args.namespace), ("service_account", args.service_account)):
        if not _DNS_LABEL.match(value):
            problems.append(f"{label}={value!r} is not a DNS label")
    if not args.files:
        problems.append("files is empty: a class without secrets mounts nothing")
    bad = [f for f in args.files if not _FILE_NAME.match(f) or f in (".", "..")]
    if bad:
        problems.append(f"file names {bad}: letters, digits, '.', '_' and '-' only")
    raise_if("SecretDelivery", problems)
