"""Old import paths of modules that moved, kept working for one release (CHANGELOG.md, 0.3.0).

Importing an old path warns (``DeprecationWarning``, naming the new path and the release that drops the old one)
and gives the module at its new path: the very same module object, so classes, ``isinstance`` checks and
``mock.patch`` targets agree whichever path a caller used. A moved package's submodules resolve the same way
(``inference_platform.catalog.models`` is ``inference_platform.catalog.models``), through one finder on
``sys.meta_path``; loading a moved file a second time under its old name would create a second, different copy of
every class in it.

Nothing in the product imports an old path (tests/test_architecture.py); the shims exist for other teams'
programs, which get a release to change their imports.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

REMOVED_IN = "0.4.0"
"""The release that drops every old path listed here."""

NAMESPACE = "inference_platform"

MOVED_PACKAGES: dict[str, str] = {
    f"{NAMESPACE}.components.catalog": f"{NAMESPACE}.catalog",
    f"{NAMESPACE}.infra.settings": f"{NAMESPACE}.settings",
}
"""Whole packages: the package and every submodule under it."""

MOVED_MODULES: dict[str, str] = {
    f"{NAMESPACE}.offline_plan.project": f"{NAMESPACE}.settings.project",
    f"{NAMESPACE}.offline_plan.project_config": f"{NAMESPACE}.settings.project_config",
    f"{NAMESPACE}.offline_plan.stack_settings": f"{NAMESPACE}.settings.stack_files",
    f"{NAMESPACE}.components.network.cidr": f"{NAMESPACE}.planners.cidr",
    f"{NAMESPACE}.components.network.endpoint_services": f"{NAMESPACE}.catalog.endpoint_services",
    f"{NAMESPACE}.components.storage.lustre": f"{NAMESPACE}.catalog.lustre",
    f"{NAMESPACE}.components.serving.placement": f"{NAMESPACE}.planners.placement",
    f"{NAMESPACE}.components.compute.pool_profile": f"{NAMESPACE}.catalog.pool_profile",
    f"{NAMESPACE}.components.autoscaling.schedule": f"{NAMESPACE}.planners.night_schedule",
    f"{NAMESPACE}.components.edge.policy": f"{NAMESPACE}.catalog.edge_policy",
}
"""Single modules."""

MOVED_NAMES: dict[str, dict[str, str]] = {
    f"{NAMESPACE}.infra.settings.capacity": {
        "derived_bounds": f"{NAMESPACE}.settings.derived:derived_bounds",
        "planned_replicas": f"{NAMESPACE}.settings.derived:planned_replicas",
        "summary": f"{NAMESPACE}.settings.derived:capacity_summary",
    },
    f"{NAMESPACE}.infra.settings.replica_bounds": {"day_bounds": f"{NAMESPACE}.settings.derived:day_bounds"},
    f"{NAMESPACE}.infra.settings.cold_start": {
        "for_settings": f"{NAMESPACE}.settings.derived:cold_start_model",
        "max_share": f"{NAMESPACE}.settings.derived:max_share",
        "summary": f"{NAMESPACE}.settings.derived:cold_start_summary",
    },
    f"{NAMESPACE}.infra.settings.edge": {"stack_edge_policy": f"{NAMESPACE}.settings.derived:stack_edge_policy"},
}
"""Functions that left their module when they moved (the typed ``settings.derived``): at the OLD module path only,
the old name still answers, with the warning."""


def new_name(old: str) -> str | None:
    """Where an old module path lives now, or None when it did not move."""
    if old in MOVED_MODULES:
        return MOVED_MODULES[old]
    for package, target in MOVED_PACKAGES.items():
        if old == package or old.startswith(f"{package}."):
            return target + old[len(package) :]
    return None


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}: import it from there ({old} goes in {NAMESPACE} {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=4,
    )


def resolve(old: str) -> ModuleType:
    """The module an old path names, imported at its new path, with the deprecation warning."""
    new = new_name(old)
    if new is None:
        raise ImportError(f"{old} did not move")
    _warn(old, new)
    return importlib.import_module(new)


class _OldPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers old submodule paths of moved packages with the module at the new path."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None or fullname in MOVED_MODULES or fullname in MOVED_PACKAGES:
            return None  # not moved, or a shim file of its own answers it
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # The existing module object is returned: the import system leaves its __name__, __spec__ and __file__
        # alone (they are set), and files it under the old name in sys.modules too.
        module = resolve(spec.name)
        if spec.name in MOVED_NAMES:
            return _WithMovedNames(spec.name, module, MOVED_NAMES[spec.name])
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module already ran at its new path."""


class _WithMovedNames(ModuleType):
    """An old module path some of whose functions moved elsewhere: every name reads through to the module at the
    new path, and a moved name to its new home (with the warning)."""

    def __init__(self, old: str, module: ModuleType, names: dict[str, str]) -> None:
        super().__init__(old, module.__doc__)
        self.__dict__["_module"] = module
        self.__dict__["_names"] = names

    def __getattr__(self, name: str) -> Any:
        target = self._names.get(name)
        if target is None:
            return getattr(self._module, name)
        module, _, attribute = target.partition(":")
        _warn(f"{self.__name__}.{name}", f"{module}.{attribute}")
        return getattr(importlib.import_module(module), attribute)


_FINDER = _OldPathFinder()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): the old package's folder still exists for its shim,
    and the ordinary path finder must not load a moved file again from there."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
