"""The stack's customer-managed KMS keys (cluster secrets, storage, logs).

This module is the area's public surface; the modules beside it hold the pieces and private helpers.
"""

from components.keys.kms import Keys, KeysArgs

__all__ = [
    "Keys",
    "KeysArgs",
]
