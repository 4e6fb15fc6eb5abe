"""Model storage: the S3 model and log buckets, the FSx for Lustre cache and its CSI driver, and the
read-only / read-write model access roles.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.storage.fsx_csi import FsxCsi, FsxCsiArgs
    from inference_platform.components.storage.model_access import ModelAccess, ModelAccessArgs, ServiceAccount
    from inference_platform.components.storage.model_cache import ModelCache, ModelCacheArgs
    from inference_platform.components.storage.model_store import LifecycleArgs, ModelStore, ModelStoreArgs

__all__ = [
    "FsxCsi",
    "FsxCsiArgs",
    "LifecycleArgs",
    "ModelAccess",
    "ModelAccessArgs",
    "ModelCache",
    "ModelCacheArgs",
    "ModelStore",
    "ModelStoreArgs",
    "ServiceAccount",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "fsx_csi": ("FsxCsi", "FsxCsiArgs"),
    "model_access": ("ModelAccess", "ModelAccessArgs", "ServiceAccount"),
    "model_cache": ("ModelCache", "ModelCacheArgs"),
    "model_store": ("LifecycleArgs", "ModelStore", "ModelStoreArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
