"""Lazy package exports (PEP 562): an area's ``__init__`` names its public surface without importing it.

Why: Python runs a package's ``__init__`` before any of its modules, so an ``__init__`` that imported its
ComponentResources eagerly loaded ``pulumi``, ``pulumi_aws`` and ``pulumi_kubernetes`` for anyone who only
wanted an area's pure parts (``inference_platform.components.autoscaling.scaled_object``, ``inference_platform.planners.cidr`` ...).
``inference_platform.settings`` imports those, and the inference image imports ``inference_platform.settings`` while carrying no Pulumi
(inference_image/Dockerfile installs this package with ``--no-deps``): every ``inferctl serve``, ``prepare``
and ``verify`` in the image ended in ``ModuleNotFoundError: No module named 'pulumi'``.

So an area's ``__init__`` imports nothing at run time. It lists its exports once for this helper and once
under ``if TYPE_CHECKING:`` for type checkers and readers; ``from inference_platform.components.network import Network`` works
as before and loads ``inference_platform.components.network.vpc`` (and Pulumi) only then. tests/test_architecture.py checks the
two lists agree with ``__all__``, and that importing any area package loads no Pulumi module.

Source: PEP 562 (module ``__getattr__`` and ``__dir__``), the mechanism scientific-python's ``lazy_loader``
(``attach(__name__, submod_attrs=...)``) is built on.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``exports`` maps each module (relative to the package) to
    the names it exports; a module of the shared layers below the components (``inference_platform.catalog...``,
    ``inference_platform.planners...``) is named in full. A name is imported from its module on first access and
    then kept on the package, so later look-ups are ordinary attribute reads (and ``from package import *``
    follows ``__all__``)."""
    where = {name: _full(package, module) for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__


def _full(package: str, module: str) -> str:
    return module if module.startswith("inference_platform.") else f"{package}.{module}"
