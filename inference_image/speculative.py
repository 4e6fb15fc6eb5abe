"""The ``tensorrt_llm`` parameters that carry the settings' speculative-decoding tree.

Facts and refusals live in ``inference_platform.components.catalog.speculative`` (the settings validate with them).
"""

from __future__ import annotations

from typing import Any

from inference_platform.components.catalog.speculative import CHOICES_PARAMETER, format_choices


def speculative_parameters(serving: Any) -> dict[str, str]:
    """``medusa_choices`` or ``eagle_choices`` from ``serving.speculative.choices`` (none without a tree)."""
    spec = serving.speculative
    if spec.mode == "none" or not spec.choices:
        return {}
    return {CHOICES_PARAMETER[spec.mode]: format_choices(spec.choices)}
