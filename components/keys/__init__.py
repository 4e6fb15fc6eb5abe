"""The stack's customer-managed KMS keys (cluster secrets, storage, logs).

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.keys.kms import Keys, KeysArgs

__all__ = [
    "Keys",
    "KeysArgs",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "kms": ("Keys", "KeysArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
