"""Moved to ``inference_platform.catalog.lustre`` in 0.3.0. This old path keeps working until 0.4.0 with a DeprecationWarning
(inference_platform/moved.py, CHANGELOG.md)."""

import sys

from inference_platform import moved

sys.modules[__name__] = moved.resolve(__name__)
