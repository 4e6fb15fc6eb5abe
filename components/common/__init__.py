"""What every area shares: the one validation error components raise, and the stack-wide default tags.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.common.errors import ComponentArgsError
    from inference_platform.components.common.tagging import default_tags_transform, is_taggable

__all__ = [
    "ComponentArgsError",
    "default_tags_transform",
    "is_taggable",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "errors": ("ComponentArgsError",),
    "tagging": ("default_tags_transform", "is_taggable"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
