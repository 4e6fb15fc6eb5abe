"""Secrets Manager secrets and their delivery into pods through the Secrets Store CSI driver.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from typing import TYPE_CHECKING

from inference_platform.components.common.exports import lazy_exports

if TYPE_CHECKING:
    from inference_platform.components.secrets.delivery import SecretDelivery, SecretDeliveryArgs
    from inference_platform.components.secrets.secrets_manager import Secrets, SecretsArgs
    from inference_platform.components.secrets.secrets_store_csi import SecretsStoreCsi, SecretsStoreCsiArgs

__all__ = [
    "SecretDelivery",
    "SecretDeliveryArgs",
    "Secrets",
    "SecretsArgs",
    "SecretsStoreCsi",
    "SecretsStoreCsiArgs",
]

# Imported on first use (components/common/exports.py): importing this package loads no Pulumi module.
_EXPORTS = {
    "delivery": ("SecretDelivery", "SecretDeliveryArgs"),
    "secrets_manager": ("Secrets", "SecretsArgs"),
    "secrets_store_csi": ("SecretsStoreCsi", "SecretsStoreCsiArgs"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
