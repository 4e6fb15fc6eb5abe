"""Secrets rules: Secrets Manager secrets use a customer-managed key; no secret-looking literal sits in
a plain input (environment variables, tags, ConfigMap data).

The engine hands policies secret values already unwrapped, so a rule cannot tell a value marked
secret from a literal. It need not: a credential in an environment variable, a tag or a ConfigMap is
stored in clear in the Kubernetes API or the AWS console whatever Pulumi's state says. Credentials
reach pods as files through the Secrets Store CSI driver instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy
from inference_platform.policies.props import get

SECRET = "aws:secretsmanager/secret:Secret"
AWS_MANAGED_SECRETS_KEY = "alias/aws/secretsmanager"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
SECRET_LIKE = re.compile(r"KEY|TOKEN|PASSWORD|PASSWD|SECRET", re.IGNORECASE)
TAG_MAPS = ("tags", "tagsAll")


def _customer_managed_key(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != SECRET:
        return
    key = get(args.props, "kmsKeyId")
    if not key or str(key).endswith(AWS_MANAGED_SECRETS_KEY):
        report(
            f"{args.name}: encrypted with the AWS-managed key; set kms_key_id to a customer-managed key so "
            "its use is governed by this stack's key policy and can be revoked"
        )


def _is_list(value: Any) -> bool:
    return not isinstance(value, (str, bytes, Mapping)) and isinstance(value, Iterable)


def is_reference(value: str) -> bool:
    """A file path or an ARN names where a secret is, not what it is."""
    return value.startswith("/") or value.startswith("arn:")


def secret_literals(props: Mapping[str, Any], resource_type: str = "") -> Iterator[str]:
    """Paths of secret-looking names holding a literal: tag maps, ``env`` lists/maps (Kubernetes
    containers, Helm values), Lambda-style ``environment.variables`` and ConfigMap ``data``."""

    def named(pairs: Iterable[tuple[Any, Any]], path: str) -> Iterator[str]:
        for name, value in pairs:
            if (
                isinstance(name, str)
                and SECRET_LIKE.search(name)
                and isinstance(value, str)
                and value.strip()
                and not is_reference(value)
            ):
                yield f"{path}.{name}"

    def walk(value: Any, path: str) -> Iterator[str]:
        if isinstance(value, Mapping):
            for key, item in value.items():
                here = f"{path}.{key}" if path else str(key)
                if key in (*TAG_MAPS, "env") and isinstance(item, Mapping):
                    yield from named(item.items(), here)
                elif key == "env" and _is_list(item):
                    entries = [e for e in item if isinstance(e, Mapping)]
                    yield from named(((e.get("name"), e.get("value")) for e in entries), here)
                elif key == "variables" and path.endswith("environment") and isinstance(item, Mapping):
                    yield from named(item.items(), here)
                yield from walk(item, here)
        elif _is_list(value):
            for i, item in enumerate(value):
                yield from walk(item, f"{path}[{i}]")

    if resource_type == CONFIG_MAP:
        yield from named((get(props, "data", {}) or {}).items(), "data")
    yield from walk(props, "")


def _no_secret_literals(args: ResourceValidationArgs, report: ReportViolation) -> None:
    allowed = set(args.get_config().get("allowedNames", []))
    for path in secret_literals(args.props, args.resource_type):
        if path.rsplit(".", 1)[-1] in allowed:
            continue
        report(
            f"{args.name}: {path} holds a literal value under a secret-looking name; deliver it from Secrets "
            "Manager (Secrets Store CSI volume) or reference it (valueFrom/secretKeyRef) instead"
        )


POLICIES = [
    ResourceValidationPolicy(
        name="secretsmanager-cmk",
        description="Secrets Manager secrets are encrypted with a customer-managed KMS key.",
        validate=_customer_managed_key,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    ResourceValidationPolicy(
        name="no-secret-literals",
        description="No environment variable, tag or ConfigMap entry named like *KEY*, *TOKEN*, *PASSWORD* or "
        "*SECRET* holds a literal value.",
        validate=_no_secret_literals,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"allowedNames": {"type": "array", "items": {"type": "string"}, "default": []}}
        ),
    ),
]
