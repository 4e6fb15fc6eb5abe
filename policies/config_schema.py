"""Configuration schemas policies share: the shape a policy's CrossGuard configuration takes."""

from __future__ import annotations

from pulumi_policy import PolicyConfigSchema


def name_list(key: str, default: list[str], description: str) -> PolicyConfigSchema:
    """A configuration of one list of names under ``key`` (exemptions such as ``Kind/ns/name/container``),
    with its default and what the names are."""
    return PolicyConfigSchema(
        properties={key: {"type": "array", "items": {"type": "string"}, "default": default, "description": description}}
    )
