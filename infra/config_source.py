"""Reads the stack's Pulumi config into plain values and builds the validated settings.

This is the only module of the program that touches ``pulumi.Config``. A bad config ends the run with
``pulumi.RunError`` (the CLI prints its message without a traceback) before any resource exists.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from infra.settings import SECTIONS, Settings, SettingsError, known_keys, load_settings


def read_settings() -> Settings:
    project, stack = pulumi.get_project(), pulumi.get_stack()
    cfg = pulumi.Config()
    values: dict[str, Any] = {}
    section_keys = {s.key for s in SECTIONS}
    for key in _present_project_keys(project):
        raw = cfg.get(key)
        if raw is None:
            continue
        values[key] = _decode(raw) if key in section_keys else raw
    secret_keys = [k for k in values if runtime_config.is_config_secret(f"{project}:{k}")]
    try:
        return load_settings(
            values, project=project, stack=stack, region=pulumi.Config("aws").get("region"), secret_keys=secret_keys
        )
    except SettingsError as err:
        raise pulumi.RunError(str(err)) from None


def _present_project_keys(project: str) -> list[str]:
    """Every project-namespaced key set for this stack, so typos are reported rather than ignored."""
    prefix = f"{project}:"
    present = set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())
    keys = {k[len(prefix) :] for k in present if k.startswith(prefix)}
    return sorted(keys | set(known_keys()))


def _decode(raw: str) -> Any:
    """Objects reach the program as JSON text; a value that is not JSON is passed on for validation."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw
