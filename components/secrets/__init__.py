"""Secrets Manager secrets and their delivery into pods through the Secrets Store CSI driver.

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from components.secrets.delivery import SecretDelivery, SecretDeliveryArgs
from components.secrets.secrets_manager import Secrets, SecretsArgs
from components.secrets.secrets_store_csi import SecretsStoreCsi, SecretsStoreCsiArgs

__all__ = [
    "SecretDelivery",
    "SecretDeliveryArgs",
    "Secrets",
    "SecretsArgs",
    "SecretsStoreCsi",
    "SecretsStoreCsiArgs",
]
