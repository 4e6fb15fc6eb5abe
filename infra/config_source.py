"""Reads the stack's Pulumi config into plain values and builds the validated settings.

This is the only module of the program that touches ``pulumi.Config``. A bad config ends the run with
``pulumi.RunError`` (the CLI prints its message without a traceback) before any resource exists.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime import config as runtime_config

from inference_platform.settings import Settings, SettingsError, decode_value, known_keys, load_settings


def read_settings() -> Settings:
    project, stack = pulumi.get_project(), pulumi.get_stack()
    cfg = pulumi.Config()
    values: dict[str, Any] = {}
    for key in _present_project_keys(project):
        raw = cfg.get(key)
        if raw is not None:
            values[key] = decode_value(key, raw)
    secret_keys = [k for k in values if runtime_config.is_config_secret(f"{project}:{k}")]
    try:
        return load_settings(
            values, project=project, stack=stack, region=pulumi.Config("aws").get("region"), secret_keys=secret_keys
        )
    except SettingsError as err:
        raise pulumi.RunError(str(err)) from None


def secret_value(key: str) -> pulumi.Output[str] | None:
    """A secret config value (one of ``SECRET_KEYS``, validated by :func:`read_settings`), kept secret;
    ``None`` when unset (Pulumi.yaml's empty default means unset)."""
    if not runtime_config.get_config(f"{pulumi.get_project()}:{key}"):
        return None
    return pulumi.Config().get_secret(key)


def _present_project_keys(project: str) -> list[str]:
    """Every project-namespaced key set for this stack, so typos are reported rather than ignored."""
    prefix = f"{project}:"
    present = set(runtime_config.CONFIG.get()) | set(runtime_config.get_config_env())
    keys = {k[len(prefix) :] for k in present if k.startswith(prefix)}
    return sorted(keys | set(known_keys()))
