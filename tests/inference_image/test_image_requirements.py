"""The GPU image's Python requirements, locked with what the base image ships (locks/image-gpu.txt).

``make lock`` resolves requirements-image.txt for the base's Python (the ``# python:`` line of
base_image_constraints.txt) with base_image_constraints.txt as constraints; the Dockerfile installs the lock with
--no-deps, which replaces the base's copy of any distribution it pins. Hermetic: these tests read the files only.
"""

from __future__ import annotations

import re
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

from tools import lock as lock_tool
from tools.lockfile import expected, normalize

IMAGE = Path(__file__).resolve().parents[2] / "inference_image"
REQUIREMENTS = IMAGE / "requirements-image.txt"
CONSTRAINTS = IMAGE / "base_image_constraints.txt"
LOCK = lock_tool.IMAGE_GPU.path
# What the base's transformers==4.57.1 brings with it (its own tokenizers>=0.22,<=0.23): never asked for again.
BASE_BRINGS = {"tokenizers"}


def _requirements(path: Path) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


def _base_python() -> str:
    match = re.search(r"^# python: (\d+\.\d+)$", CONSTRAINTS.read_text(), re.MULTILINE)
    assert match, f"{CONSTRAINTS} must record the base image's Python"
    return match.group(1)


def base_conflicts(lock: Path) -> list[str]:
    """What the lock would do to the base image: pin what only the base may pin, or leave a constraint's range."""
    environment = {
        **default_environment(),
        "python_version": _base_python(),
        "python_full_version": f"{_base_python()}.0",
    }
    pins = expected([lock], environment)
    found = []
    for req in _requirements(CONSTRAINTS):
        pin = pins.get(normalize(req.name))
        if pin and not req.specifier.contains(pin.version, prereleases=True):
            found.append(f"{pin.name}=={pin.version} outside the base's {req}")
    found += [f"{name}=={pins[name].version} is the base's own" for name in sorted(BASE_BRINGS & pins.keys())]
    return found


def test_nothing_the_base_pins_is_asked_for_again():
    pinned = {req.name.lower() for req in _requirements(CONSTRAINTS)} | BASE_BRINGS
    asked = {req.name.lower() for req in _requirements(REQUIREMENTS)}
    assert asked.isdisjoint(pinned), asked & pinned
    for req in _requirements(REQUIREMENTS):
        assert req.specifier and any(s.operator == "<" for s in req.specifier), f"{req} needs an upper bound"


def test_the_lock_is_compiled_for_the_base_python_under_its_constraints():
    assert lock_tool.IMAGE_GPU.python == _base_python()
    assert CONSTRAINTS in lock_tool.IMAGE_GPU.constraints
    assert lock_tool.IMAGE_GPU.inputs == (REQUIREMENTS.relative_to(lock_tool.REPO).as_posix(),)


def test_the_lock_keeps_the_base_images_packages():
    assert base_conflicts(LOCK) == []


def test_the_check_catches_the_conflict_the_image_had(tmp_path):
    """The check can fail: a lock asking for ``tokenizers`` (the base's transformers==4.57.1 needs its own) or a
    numpy 2 (the base's TensorRT-LLM asks numpy<2)."""
    broken = tmp_path / "image-gpu.txt"
    # The lock pins no numpy of its own today (nothing it installs needs one): the broken lock adds one.
    kept = re.sub(r"^numpy==\S+( \\\n(    --hash=\S+( \\)?\n)+)?", "", LOCK.read_text(), flags=re.MULTILINE)
    broken.write_text(kept + "numpy==2.0.0 \\\n    --hash=sha256:00\ntokenizers==0.21.0 \\\n    --hash=sha256:00\n")
    assert base_conflicts(broken) == ["numpy==2.0.0 outside the base's numpy<2", "tokenizers==0.21.0 is the base's own"]
