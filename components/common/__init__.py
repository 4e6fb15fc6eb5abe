"""What every area shares: the one validation error components raise, and the stack-wide default tags.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from components.common.errors import ComponentArgsError
from components.common.tagging import default_tags_transform, is_taggable

__all__ = [
    "ComponentArgsError",
    "default_tags_transform",
    "is_taggable",
]
