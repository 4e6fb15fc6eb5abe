"""A stack's validated settings as one JSON document, and back: what a pod reads instead of the stack files.

The verification Job runs ``inferctl verify`` inside the cluster, where neither ``Pulumi.yaml`` nor the stack
file exists; the program hands it this document in a ConfigMap. It holds what the stack set (``exclude_unset``:
the project defaults fill in again on load, so the two sides cannot drift) and no secret: the only secret keys
(``SECRET_KEYS``) are top-level values the document never includes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic.alias_generators import to_snake

from inference_platform.settings import SECTIONS, Settings, load_settings

FORMAT = "inference-platform/settings/v1"


def settings_document(settings: Settings) -> dict[str, Any]:
    values: dict[str, Any] = {"environment": settings.environment}
    for section in SECTIONS:
        value = getattr(settings, to_snake(section.key))
        dumped = value.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if dumped:
            values[section.key] = dumped
    return {
        "format": FORMAT,
        "project": settings.project,
        "stack": settings.stack,
        "region": settings.region.name,
        "values": values,
    }


def settings_from_document(doc: Mapping[str, Any]) -> Settings:
    """Validates again (a SettingsError names the key, as for the stack file)."""
    if doc.get("format") != FORMAT:
        raise ValueError(f"format: got {doc.get('format')!r}; expected {FORMAT!r}")
    return load_settings(doc["values"], project=doc["project"], stack=doc["stack"], region=doc["region"])
