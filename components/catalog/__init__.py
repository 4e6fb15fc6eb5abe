"""Moved: the catalog (pure data and look-ups) is ``inference_platform.catalog`` from 0.3.0. This old path, and every submodule under it, keeps
working until 0.4.0 with a DeprecationWarning (inference_platform/moved.py, CHANGELOG.md)."""

import sys

from inference_platform import moved

moved.install()
sys.modules[__name__] = moved.resolve(__name__)
