"""The serving settings an InferenceService hands its pods (``/etc/inference/serving.json``), as a type.

The rollout writes them once into an immutable ConfigMap named by their content hash; the image validates the file
again when it starts (inference_image/settings_source.py). The stack's validated serving section,
``inference_platform.settings.serving.ServingSettings``, is a ``ServingConfig``: pass it as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class ServingConfig(Protocol):
    """What ``InferenceServiceArgs.serving_config`` takes: an object that dumps the serving settings in their
    wire form (camelCase keys, JSON values), as a pydantic model does. ``ServingSettings`` is one."""

    def model_dump(self, *, mode: str, by_alias: bool, exclude_none: bool) -> dict[str, Any]:
        """The settings as the pods' file holds them."""
        ...


@dataclass(frozen=True)
class ServingDocument:
    """Serving settings already in wire form (the multi-language package's JSON input). Nothing checks them
    before the pod starts, where the image refuses anything ``ServingSettings`` does not accept: from Python,
    pass ``ServingSettings`` instead."""

    values: Mapping[str, Any]
    """The settings' keys as ``serving`` in a stack file spells them."""

    def model_dump(self, *, mode: str = "json", by_alias: bool = True, exclude_none: bool = True) -> dict[str, Any]:
        """The values as given (they are wire form already)."""
        return dict(self.values)


def settings_file(config: ServingConfig) -> str:
    """The pods' settings file: one rendering for every caller, so equal settings name the same ConfigMap."""
    return json.dumps(config.model_dump(mode="json", by_alias=True, exclude_none=True), indent=2, sort_keys=True)
