"""``make lock``: compile every lock under ``locks/`` with uv from the ranges the repository declares, and print
what changed (one ``name version -> version`` line per distribution and lock).

    python -m tools.lock                       # keep every existing pin that still fits its ranges
    python -m tools.lock --upgrade             # everything to the newest release the ranges allow
    python -m tools.lock --upgrade-package moto --upgrade-package botocore

uv (pinned in locks/dev.txt, so every machine compiles with the same resolver) prefers the pins of an existing
output file, so a run without ``--upgrade`` changes only what a changed range forces. Every lock carries exact
versions and the SHA-256 of every file of each release (``--generate-hashes``), transitive dependencies
included, resolved for every platform (``--universal``: markers say where a pin applies), but for guidellm's, which
holds one platform's files (PyTorch's CPU build; requirements-guidellm.txt says why).

The virtualenv's locks are resolved as one set first (``build/lock/venv.txt``: the application, the
development tools and the bootstrap tools together), then split: ``app.txt`` (``.[all]``) and ``dev.txt``
(requirements-dev.txt) are compiled with that set as constraints, so they agree on every shared distribution.
The images' locks take the same set as constraints where their Python allows, so an image runs the versions
the tests ran. ``requirements.txt`` and ``provider/requirements.txt`` are written from ``app.txt`` and
``core.txt`` (exact pins without hashes, see ``write_pins``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tools.lockfile import read_lock

REPO = Path(__file__).resolve().parents[1]
LOCKS = REPO / "locks"
WORK = REPO / "build" / "lock"
VENV_SET = WORK / "venv.txt"
"""The virtualenv's whole resolution: constraints for app.txt, dev.txt and the images (not committed)."""
COMPILE_COMMAND = "make lock"


@dataclasses.dataclass(frozen=True)
class Lock:
    """One lock file and how uv compiles it."""

    path: Path
    inputs: tuple[str, ...]
    """What uv reads: requirement files or pyproject.toml (repository-relative)."""
    python: str
    """The lowest Python the lock resolves for (``--universal`` covers the newer ones)."""
    options: tuple[str, ...] = ()
    constraints: tuple[Path, ...] = ()
    why: str = ""
    platform: str | None = None
    """uv's ``--python-platform``: a lock for this one platform instead of ``--universal`` (for a pin whose only
    file is one platform's wheel)."""

    @property
    def name(self) -> str:
        return self.path.relative_to(REPO).as_posix()


BOOTSTRAP = Lock(
    LOCKS / "bootstrap.txt", ("requirements-bootstrap.txt",), "3.11", why="pip and setuptools, installed first"
)
# Resolved first, not written to locks/: the application, dev and bootstrap tools as one set.
VENV = Lock(
    VENV_SET,
    ("pyproject.toml", "requirements-dev.txt"),
    "3.11",
    ("--all-extras",),
    (LOCKS / "bootstrap.txt",),
)
APP = Lock(LOCKS / "app.txt", ("pyproject.toml",), "3.11", ("--all-extras",), (VENV_SET,), "the application: .[all]")
DEV = Lock(
    LOCKS / "dev.txt", ("requirements-dev.txt",), "3.11", (), (VENV_SET,), "test, lint and local-serving tools, uv"
)
CORE = Lock(
    LOCKS / "core.txt",
    ("pyproject.toml",),
    "3.11",
    (),
    (LOCKS / "app.txt",),
    "the core install (no extras) at app.txt's versions: provider/ and the wheel's consumer test",
)
TRITON = Lock(
    LOCKS / "triton.txt", ("requirements-triton.txt",), "3.11", ("--no-deps",), why="nvidia-pytriton, --no-deps"
)
CHECKOV = Lock(
    LOCKS / "checkov.txt", ("requirements-checkov.txt",), "3.11", (), (LOCKS / "bootstrap.txt",), "Checkov's virtualenv"
)
CLIENTS = Lock(
    LOCKS / "clients.txt",
    ("requirements-clients.txt",),
    "3.11",
    (),
    (LOCKS / "bootstrap.txt",),
    "the real clients' virtualenv (.venv-clients)",
)
TORCH_CPU_WHEELS = "/opt/wheels"
"""Where this machine kind (the CI machines' too) keeps PyTorch's CPU build for CPython 3.11 on Linux x86_64 (pip's
configured ``find-links``); PyPI's Linux x86_64 torch is a CUDA build. The lock names this directory
(``--emit-find-links``), so ``pip install -r locks/guidellm.txt`` finds the file whatever the user's pip settings, and
pins its SHA-256."""
GUIDELLM = Lock(
    LOCKS / "guidellm.txt",
    ("requirements-guidellm.txt",),
    "3.11",
    ("--find-links", TORCH_CPU_WHEELS, "--emit-find-links"),
    (LOCKS / "bootstrap.txt",),
    "guidellm's virtualenv (.venv-guidellm): torch's CPU build, Linux x86_64, CPython 3.11",
    platform="x86_64-manylinux_2_28",
)
IMAGE_GPU = Lock(
    LOCKS / "image-gpu.txt",
    ("inference_image/requirements-image.txt",),
    # NVIDIA's Triton + TensorRT-LLM base runs Python 3.12 (the `# python:` line of base_image_constraints.txt).
    "3.12",
    (),
    (REPO / "inference_image" / "base_image_constraints.txt", VENV_SET),
    "inference_image/Dockerfile, on the base image's own packages",
)
IMAGE_NEURON = Lock(
    LOCKS / "image-neuron.txt",
    ("inference_image/requirements-image.txt", "inference_image/requirements-neuron.txt"),
    "3.11",
    (),
    (VENV_SET,),
    "inference_image/Dockerfile.neuron's own pip step (the Neuron SDK comes from AWS's index, unlocked)",
)
IMAGE_BATCH = Lock(LOCKS / "image-batch.txt", ("batch/requirements.txt",), "3.11", (), (VENV_SET,), "batch/Dockerfile")
IMAGE_VERIFICATION = Lock(
    LOCKS / "image-verification.txt",
    ("inference_image/verification/requirements.txt",),
    "3.11",
    (),
    (VENV_SET,),
    "inference_image/verification/Dockerfile",
)

ORDER: tuple[Lock, ...] = (
    BOOTSTRAP, VENV, APP, DEV, CORE, TRITON, CHECKOV, CLIENTS, GUIDELLM, IMAGE_GPU, IMAGE_NEURON, IMAGE_BATCH,
    IMAGE_VERIFICATION,
)  # fmt: skip
"""In dependency order: each lock's constraints are compiled before it."""
COMMITTED: tuple[Lock, ...] = tuple(lock for lock in ORDER if lock is not VENV)


def pins(path: Path) -> dict[str, str]:
    """``name -> version`` of a lock's pins (a name pinned twice under different markers: ``v1 | v2``)."""
    found: dict[str, list[str]] = {}
    for pin in read_lock(path) if path.is_file() else ():
        versions = found.setdefault(pin.name, [])
        if pin.version not in versions:
            versions.append(pin.version)
    return {name: " | ".join(versions) for name, versions in sorted(found.items())}


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What moved between two sets of pins, one line each: ``+ name v``, ``- name v``, ``name v -> w``."""
    lines = []
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old is None:
            lines.append(f"+ {name} {new}")
        elif new is None:
            lines.append(f"- {name} {old}")
        elif old != new:
            lines.append(f"  {name} {old} -> {new}")
    return lines


def _uv(lock: Lock, uv: str, upgrade: bool, upgrade_packages: list[str], extra: list[Path]) -> None:
    output = lock.path.resolve()
    output.parent.mkdir(parents=True, exist_ok=True)
    where = ["--python-platform", lock.platform] if lock.platform else ["--universal"]
    command = [uv, "pip", "compile", "--quiet", *lock.inputs, *lock.options, *where]
    command += ["--python-version", lock.python, "--generate-hashes", "--custom-compile-command", COMPILE_COMMAND]
    for constraint in (*lock.constraints, *extra):
        command += ["--constraint", os.path.relpath(constraint, REPO)]
    if upgrade:
        command.append("--upgrade")
    for package in upgrade_packages:
        command += ["--upgrade-package", package]
    command += ["--output-file", os.path.relpath(output, REPO)]
    # uv's own cache and settings only: a user's uv.toml or UV_* index settings would change what resolves.
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")} | {"UV_NO_CONFIG": "1"}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if result.returncode:
        raise SystemExit(f"make lock: {lock.name} did not resolve:\n$ {' '.join(command)}\n{result.stderr}")


def seed_venv_set() -> None:
    """Let the whole-virtualenv resolution prefer today's pins: uv prefers what its output file pins, and this
    intermediate file is not kept, so it starts as the pins of app.txt and dev.txt."""
    lines: list[str] = []
    for lock in (APP, DEV):
        for pin in pin_lines(lock.path) if lock.path.is_file() else ():
            if pin not in lines:
                lines.append(pin)
    VENV_SET.parent.mkdir(parents=True, exist_ok=True)
    VENV_SET.write_text("".join(f"{line}\n" for line in lines))


def pin_lines(path: Path) -> list[str]:
    """A lock's pins as requirement lines without hashes (``name==version ; marker``), in the lock's order."""
    return [f"{pin.name}=={pin.version}{f' ; {pin.marker}' if pin.marker else ''}" for pin in read_lock(path)]


REQUIREMENTS_HEADER = """\
# Generated by `make lock` from {lock} (tools/lock.py): edit the ranges in pyproject.toml, never this file.
# {what}
# The exact versions of the lock, without its hashes: pip turns hash-checking on as soon as one requirement carries
# --hash, and then refuses the editable or local install of this repository below ("cannot be installed when
# requiring hashes, because there is no single file to hash"). `make venv` installs the hashed locks instead
# (docs/installing.md). tests/test_locks.py keeps this file equal to the lock.
"""

REQUIREMENTS_WHAT = (
    "What `pulumi up` installs when Pulumi's pip toolchain creates .venv itself (sdk/python/toolchain/pip.go: "
    "`python -m pip\n# install --upgrade pip setuptools wheel`, then `pip install -r requirements.txt`): this "
    "repository as a package, so the\n# program under infra/ imports it as the real host runs it (main: infra/ puts "
    "only infra/ on sys.path), with every\n# extra, at the versions `make plan` and `make test` run."
)
PROVIDER_WHAT = (
    "What the Pulumi CLI installs into provider/venv (PulumiPlugin.yaml, toolchain pip, run in this folder): the "
    "core\n# install of the checkout this folder sits in (`..`), at the versions of the application lock."
)


def requirements_text(lock: Lock, what: str, project: str) -> str:
    body = "\n".join(pin_lines(lock.path))
    return f"{REQUIREMENTS_HEADER.format(lock=lock.name, what=what)}{body}\n{project}\n"


def write_pins() -> list[Path]:
    """requirements.txt and provider/requirements.txt from the locks: Pulumi's pip toolchain installs them."""
    written = []
    for path, lock, what, project in (
        (REPO / "requirements.txt", APP, REQUIREMENTS_WHAT, "-e .[all]"),
        (REPO / "provider" / "requirements.txt", CORE, PROVIDER_WHAT, ".."),
    ):
        text = requirements_text(lock, what, project)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def find_uv() -> str:
    """The uv of this virtualenv (locks/dev.txt pins it), else none: a lock compiled by another uv may differ."""
    here = Path(sys.executable).parent / "uv"
    if here.is_file():
        return str(here)
    found = shutil.which("uv")
    if found:
        print(f"make lock: no uv next to {sys.executable}; using {found}", file=sys.stderr)
        return found
    raise SystemExit("make lock: uv is not installed in this virtualenv: run `make venv` (locks/dev.txt pins uv)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make lock", description=__doc__.split("\n\n")[0])
    parser.add_argument("--upgrade", action="store_true", help="every distribution to the newest its ranges allow")
    parser.add_argument("--upgrade-package", action="append", default=[], metavar="NAME",
                        help="this distribution (and what it forces) to the newest its ranges allow")  # fmt: skip
    parser.add_argument("--constraint", action="append", default=[], type=Path, metavar="FILE",
                        help="an extra constraint file for the virtualenv's resolution (e.g. to hold a release back)")  # fmt: skip
    parser.add_argument("--uv", default=None, help="the uv to run (default: the one of this virtualenv)")
    args = parser.parse_args(argv)
    uv = args.uv or find_uv()
    version = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    before = {lock.name: pins(lock.path) for lock in COMMITTED}
    seed_venv_set()
    for lock in ORDER:
        held = [c.resolve() for c in args.constraint] if lock is VENV else []
        _uv(lock, uv, args.upgrade, args.upgrade_package, held)
    written = write_pins()
    print(f"make lock ({version}):")
    changed = False
    for lock in COMMITTED:
        moved = changes(before[lock.name], pins(lock.path))
        changed |= bool(moved)
        print(f"{lock.name}: {'unchanged' if not moved else f'{len(moved)} changed'}")
        for line in moved:
            print(f"    {line}")
    for path in written:
        print(f"wrote {path.relative_to(REPO)}")
    if changed:
        print("Then: `make venv` installs the new locks; tests that pin an upstream fact say which to re-read.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
