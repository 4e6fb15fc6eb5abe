"""The public surface of the component areas (issue 19): what a program needs is exported and documented.

Every area package's ``__all__`` (components/common/exports.py keeps it lazy) is what another team imports.
Each class and function in it carries its own docstring, and every component type an exported dataclass's
fields name (ModelSource, Placement, Resources, Taint ...) is itself exported by the area that defines it, so a
program never reaches into a private module to build a component's Args.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import sys

import pytest

from tests.conftest import REPO

PREFIX = "inference_platform.components"
AREAS = sorted(p.name for p in (REPO / "components").iterdir() if (p / "__init__.py").is_file())
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _public(area: str) -> dict[str, object]:
    package = importlib.import_module(f"{PREFIX}.{area}")
    return {name: getattr(package, name) for name in package.__all__}


def _own_docstring(obj: object) -> bool:
    doc = vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if not doc or not doc.strip():
        return False
    # A dataclass without a docstring gets its signature as __doc__ ("NetworkArgs(*, cidr: str, ...)").
    return not (inspect.isclass(obj) and dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("))


@pytest.mark.parametrize("area", AREAS)
def test_every_public_class_and_function_has_a_docstring(area):
    undocumented = [
        name
        for name, obj in _public(area).items()
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not _own_docstring(obj)
    ]
    assert undocumented == [], f"{PREFIX}.{area} exports these without a docstring of their own"


def _field_types(cls: type) -> set[type]:
    """The component classes a dataclass's fields name (annotations are strings: read them in its module)."""
    namespace = vars(sys.modules[cls.__module__])
    found = set()
    for field in dataclasses.fields(cls):
        text = field.type if isinstance(field.type, str) else repr(field.type)
        for word in _IDENTIFIER.findall(text):
            candidate = namespace.get(word)
            if inspect.isclass(candidate) and candidate.__module__.startswith(f"{PREFIX}."):
                found.add(candidate)
    return found


def _exported_by_its_area(cls: type) -> bool:
    area = cls.__module__.split(".")[2]
    return _public(area).get(cls.__name__) is cls


@pytest.mark.parametrize("area", AREAS)
def test_every_type_an_exported_dataclass_takes_is_exported_where_it_is_defined(area):
    missing: set[str] = set()
    seen: set[type] = set()
    todo = [obj for obj in _public(area).values() if inspect.isclass(obj) and dataclasses.is_dataclass(obj)]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for used in _field_types(cls):
            if not _exported_by_its_area(used):
                missing.add(f"{cls.__name__} -> {used.__module__}.{used.__name__}")
            if dataclasses.is_dataclass(used):
                todo.append(used)
    assert sorted(missing) == [], "export these from the area package that defines them"


def test_the_helpers_a_program_needs_to_build_args_are_exported():
    """What issue 19's consumer program had to reach into private modules for."""
    from inference_platform.catalog.eks_versions import addon_versions as catalog_addon_versions
    from inference_platform.components.cluster import addon_versions
    from inference_platform.components.compute import PoolSpec, profile
    from inference_platform.components.serving import ModelSource, Placement, Resources

    assert addon_versions is catalog_addon_versions
    pool = profile(PoolSpec(name="gpu", instance_types=("g6e.2xlarge",)), ["us-west-2a"])
    assert pool.labels["node-pool"] == "gpu" and pool.resource_name == "nvidia.com/gpu"
    Placement(pool="gpu", taints=pool.taints, resource_name=pool.resource_name)
    ModelSource(kind="download", engine_uri="s3://b/e/", tokenizer_uri="s3://b/t/", volume_gib=50)
    Resources(cpu=4, memory_gib=16)


def test_the_checks_catch_what_they_look_for():
    @dataclasses.dataclass
    class Undocumented:
        x: int

    assert not _own_docstring(Undocumented)
    from inference_platform.components.serving.pod import ServerPod

    assert not _exported_by_its_area(ServerPod)  # a builder's input, deliberately private
    assert {t.__name__ for t in _field_types(ServerPod)} >= {"ModelSource", "Placement", "Resources"}
