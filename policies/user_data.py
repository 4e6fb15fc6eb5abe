"""A launch template's user data as the node reads it: base64 MIME parts, nodeadm ``NodeConfig`` documents
(``application/node.eks.aws``) and cloud-init shell scripts (``text/x-shellscript``), the content types Karpenter
v1.14.1 writes and the AL2023 AMI reads (components/compute/node_pool.py ``node_config_mime``)."""

from __future__ import annotations

import base64
import binascii
import email
from dataclasses import dataclass, field
from typing import Any

import yaml
from pulumi_policy.proxy import UnknownValueError

from inference_platform.policies.props import as_document

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"

NODE_CONFIG = "application/node.eks.aws"
SHELL_SCRIPT = "text/x-shellscript"


@dataclass(frozen=True)
class UserData:
    configs: list[dict[str, Any]] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    error: str | None = None
    """Set when the user data is not base64 text."""


def parse(user_data: str | None) -> UserData:
    if not user_data:
        return UserData()
    try:
        text = base64.b64decode(user_data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return UserData(error="its user data is not base64 text")
    configs: list[dict[str, Any]] = []
    scripts: list[str] = []
    for part in email.message_from_string(text).walk():
        payload = part.get_payload()
        if not isinstance(payload, str):
            continue
        if part.get_content_type() == NODE_CONFIG:
            try:
                configs += [d for d in yaml.safe_load_all(payload) if isinstance(d, dict)]
            except yaml.YAMLError:
                continue
        elif part.get_content_type() == SHELL_SCRIPT:
            scripts.append(payload)
    return UserData(configs, scripts)


def launch_template(resource_type: str, props: Any) -> dict[str, Any] | None:
    """A launch template's properties as a plain document; None for another resource, or one whose properties are
    not known at preview (not judged)."""
    if resource_type != LAUNCH_TEMPLATE:
        return None
    try:
        return as_document(props) or {}
    except UnknownValueError:
        return None
