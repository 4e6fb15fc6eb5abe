"""The locks (locks/, `make lock`) hold, and the virtualenv the suite runs in is exactly what they pin. Hermetic: it
reads files and this interpreter's package metadata only.

- `.venv` equals its locks in every distribution (the ``pip freeze --all --exclude-editable`` equivalence), so a
  test that pins an upstream fact at the locked version can trust the installed one; a difference fails here
  with the "broken install" sentence naming the distribution, both versions and `make venv`.
- Each lock satisfies the ranges its inputs declare (pyproject.toml, requirements-*.txt, the images' files and
  the base image's constraints), and the locks that share an environment agree with each other.
- requirements.txt and provider/requirements.txt are the application and core locks' pins (tools/lock.py).
- tools/deps_check/facts.py names files that exist and cite no other version than it records, and the PyPI facts
  were read at the locked version.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.locks import locked_version, moved_past
from tools import lock as lock_tool
from tools.deps_check.facts import FACTS
from tools.lockfile import (
    CHECKOV_LOCKS,
    CLIENTS_LOCKS,
    GUIDELLM_LOCKS,
    LOCKS,
    PROJECT,
    VENV_LOCKS,
    differences,
    expected,
    normalize,
    read_lock,
    venv_state,
)

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _requirements(path: Path) -> list[Requirement]:
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [Requirement(line) for line in lines if line and not line.startswith("-")]


def _declared_app() -> list[Requirement]:
    project = PYPROJECT["project"]
    extras = [d for extra in project["optional-dependencies"].values() for d in extra]
    return [Requirement(d) for d in [*project["dependencies"], *extras] if not d.startswith(f"{project['name']}[")]


def test_the_running_virtualenv_is_exactly_its_locks():
    """Every distribution of this interpreter's environment, at the locked version; none missing, none extra."""
    if Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
        pytest.skip(f"not running in the repository's .venv ({sys.prefix})")
    installed = {}
    prefix = Path(sys.prefix).resolve()
    for dist in md.distributions():
        # Only what is installed in the environment: a stray *.egg-info left in the checkout by an old
        # `setup.py develop` is on sys.path (the repository root) but is no installed distribution.
        if prefix not in Path(str(dist.locate_file(""))).resolve().parents:
            continue
        url = dist.read_text("direct_url.json")
        if url and json.loads(url).get("dir_info", {}).get("editable"):
            assert normalize(dist.metadata["Name"]) == PROJECT, (
                f"an editable install besides ours: {dist.metadata['Name']}"
            )
            continue
        installed[normalize(dist.metadata["Name"])] = dist.version
    problems = differences(installed, expected(VENV_LOCKS))
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    ("name", "locks", "target"),
    [(".venv-checkov", CHECKOV_LOCKS, "checkov"), (".venv-guidellm", GUIDELLM_LOCKS, "guidellm")],
)
def test_a_tools_own_virtualenv_is_exactly_its_locks(name, locks, target):
    venv = REPO / name
    if not (venv / "bin" / "python").exists():
        pytest.skip(f"no {name} (make {target} builds it; make test does)")
    environment, installed, _ = venv_state(venv)
    problems = differences(installed, expected(locks, environment), name)
    assert problems == [], "\n".join(problems)


def test_guidellms_torch_is_the_cpu_build_on_this_machines_disk():
    """guidellm's lock takes torch from the machine's wheel directory, which it names, with that file's SHA-256:
    the CPU build, no CUDA runtime beside it (requirements-guidellm.txt)."""
    lock = LOCKS / "guidellm.txt"
    assert f"--find-links {lock_tool.TORCH_CPU_WHEELS}\n" in lock.read_text()
    pins = {p.name: p for p in read_lock(lock)}
    torch = pins["torch"]
    assert torch.version.endswith("+cpu") and len(torch.hashes) == 1, torch
    assert [name for name in pins if name.startswith(("nvidia-", "triton"))] == []
    wheels = list(Path(lock_tool.TORCH_CPU_WHEELS).glob(f"torch-{torch.version}-*.whl"))
    if not wheels:
        pytest.skip(f"no torch {torch.version} wheel in {lock_tool.TORCH_CPU_WHEELS} (not this machine kind)")
    (wheel,) = wheels
    assert torch.hashes == (f"sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}",)


def test_the_check_names_the_distribution_both_versions_and_make_venv():
    pins = expected([LOCKS / "bootstrap.txt"])
    (line,) = differences({"pip": "0.1", "setuptools": pins["setuptools"].version}, pins)
    assert (
        line
        == f"broken install: pip 0.1 installed, the lock says {pins['pip'].version}: run `make venv` to reinstall .venv from the locks"
    )
    assert differences({"pip": pins["pip"].version, "setuptools": pins["setuptools"].version, "stray": "1"}, pins) == [
        "broken install: stray 1 installed, not in the locks: run `make venv` to reinstall .venv from the locks"
    ]


def test_every_pin_is_exact_with_hashes():
    for lock in lock_tool.COMMITTED:
        pins = read_lock(lock.path)
        assert pins, f"{lock.name} pins nothing"
        assert [p.name for p in pins if not p.hashes or not all(h.startswith("sha256:") for h in p.hashes)] == [], (
            lock.name
        )


def _check_ranges(lock: Path, requirements: list[Requirement], environment: dict[str, str] | None = None) -> list[str]:
    pins = expected([lock], environment)
    wrong = []
    for req in requirements:
        if req.marker and not req.marker.evaluate(environment):
            continue
        pin = pins.get(normalize(req.name))
        if pin is None:
            wrong.append(f"{req}: not in {lock.name}")
        elif not req.specifier.contains(pin.version, prereleases=True):
            wrong.append(f"{req}: {lock.name} pins {pin.version}")
    return wrong


PY312 = {"python_version": "3.12", "python_full_version": "3.12.3"}


@pytest.mark.parametrize(
    ("lock", "inputs", "environment"),
    [
        ("app.txt", lambda: _declared_app(), None),
        ("core.txt", lambda: [Requirement(d) for d in PYPROJECT["project"]["dependencies"]], None),
        ("dev.txt", lambda: _requirements(REPO / "requirements-dev.txt"), None),
        ("bootstrap.txt", lambda: _requirements(REPO / "requirements-bootstrap.txt"), None),
        ("triton.txt", lambda: _requirements(REPO / "requirements-triton.txt"), None),
        ("checkov.txt", lambda: _requirements(REPO / "requirements-checkov.txt"), None),
        ("clients.txt", lambda: _requirements(REPO / "requirements-clients.txt"), None),
        ("guidellm.txt", lambda: _requirements(REPO / "requirements-guidellm.txt"), None),
        ("image-batch.txt", lambda: _requirements(REPO / "batch" / "requirements.txt"), None),
        ("image-verification.txt",
         lambda: _requirements(REPO / "inference_image" / "verification" / "requirements.txt"), None),
        ("image-neuron.txt", lambda: [*_requirements(REPO / "inference_image" / "requirements-image.txt"),
                                      *_requirements(REPO / "inference_image" / "requirements-neuron.txt")], None),
        ("image-gpu.txt", lambda: _requirements(REPO / "inference_image" / "requirements-image.txt"), PY312),
    ],
)  # fmt: skip
def test_each_lock_satisfies_the_ranges_it_was_compiled_from(lock, inputs, environment):
    env = None
    if environment:
        from packaging.markers import default_environment

        env = {**default_environment(), **environment}
    assert _check_ranges(LOCKS / lock, inputs(), env) == []


def test_the_gpu_lock_keeps_the_base_images_pins():
    """What NVIDIA's base pins is never in the lock (it would replace the base's copy) or, where both need it, held
    to the base's range (numpy<2 for TensorRT-LLM)."""
    from packaging.markers import default_environment

    env = {**default_environment(), **PY312}
    pins = expected([LOCKS / "image-gpu.txt"], env)
    for req in _requirements(REPO / "inference_image" / "base_image_constraints.txt"):
        pin = pins.get(normalize(req.name))
        assert pin is None or req.specifier.contains(pin.version), f"{req}: image-gpu.txt pins {pin and pin.version}"
    assert {"transformers", "tokenizers"}.isdisjoint(pins), "the base's transformers and tokenizers are its own"


def test_the_bootstrap_setuptools_is_what_the_build_system_asks():
    (build,) = [Requirement(r) for r in PYPROJECT["build-system"]["requires"]]
    (declared,) = [r for r in _requirements(REPO / "requirements-bootstrap.txt") if r.name == "setuptools"]
    assert build.specifier == declared.specifier
    assert build.specifier.contains(locked_version("setuptools"))


def test_the_locks_of_one_virtualenv_agree():
    for locks in (
        VENV_LOCKS,
        CHECKOV_LOCKS,
        CLIENTS_LOCKS,
        GUIDELLM_LOCKS,
        (LOCKS / "bootstrap.txt", LOCKS / "image-batch.txt"),
        (LOCKS / "bootstrap.txt", LOCKS / "image-verification.txt"),
    ):
        expected(locks)  # raises naming the distribution two of them pin differently
    app = {p.name: p.version for p in read_lock(LOCKS / "app.txt")}
    core = {p.name: p.version for p in read_lock(LOCKS / "core.txt")}
    assert {n: v for n, v in core.items() if app.get(n) != v} == {}, "core.txt must be app.txt's versions"


def test_uv_is_pinned_in_the_dev_lock():
    assert "uv" in {p.name for p in read_lock(LOCKS / "dev.txt")}


@pytest.mark.parametrize(
    ("path", "lock", "what", "project"),
    [
        ("requirements.txt", lock_tool.APP, lock_tool.REQUIREMENTS_WHAT, "-e .[all]"),
        ("provider/requirements.txt", lock_tool.CORE, lock_tool.PROVIDER_WHAT, ".."),
    ],
)
def test_pulumis_requirement_files_are_the_locks_pins(path, lock, what, project):
    """Pulumi's pip toolchain installs them when it makes the virtualenv itself: exact pins, no hashes, the project."""
    assert (REPO / path).read_text() == lock_tool.requirements_text(lock, what, project), "run `make lock`"
    lines = [line for line in (REPO / path).read_text().splitlines() if line and not line.startswith("#")]
    assert lines[-1] == project and all("==" in line and "--hash" not in line for line in lines[:-1])


def test_every_pinned_fact_names_files_that_pin_it_at_its_version():
    """Each file exists and names the upstream (a chart: its version); every ``<distribution> <version>`` it cites
    is the version the facts were read at (a test taking the version from the lock cites none)."""
    for fact in FACTS:
        for rel in fact.files:
            path = REPO / rel
            assert path.is_file(), f"tools/deps_check/facts.py: {fact.name} names {rel}, which does not exist"
            text = path.read_text()
            assert (fact.name if fact.kind == "pypi" else fact.read_at) in text, f"{rel} does not name {fact.name}"
            if fact.kind == "pypi":
                cited = set(re.findall(rf"\b{re.escape(fact.name)} (\d+\.\d+\.\d+)\b", text))
                assert cited <= {fact.read_at}, f"{rel} cites {fact.name} {cited}, the facts say {fact.read_at}"


@pytest.mark.parametrize("fact", [f for f in FACTS if f.kind == "pypi"], ids=lambda f: f.name)
def test_the_pypi_facts_were_read_at_the_locked_version(fact):
    assert locked_version(fact.name) == fact.read_at, moved_past(fact.name)


def test_every_citation_of_a_registered_distribution_is_registered():
    """A file citing ``botocore 1.44.8`` (or another registered distribution at a version) is in the registry, so a
    lock that moves past it names every file to re-read."""
    names = {f.name: f for f in FACTS if f.kind == "pypi"}
    pattern = re.compile(rf"\b({'|'.join(re.escape(n) for n in names)}) (\d+\.\d+\.\d+)\b")
    roots = ("components", "policies", "planners", "batch", "infra", "inference_image", "inferctl", "tests")
    unregistered = set()
    for root in roots:
        for path in (REPO / root).rglob("*"):
            if path.suffix not in (".py", ".json") or "__pycache__" in path.parts:
                continue
            rel = path.relative_to(REPO).as_posix()
            for name, _ in pattern.findall(path.read_text(errors="replace")):
                if rel not in names[name].files and rel != "tests/test_locks.py":
                    unregistered.add(f"{rel} cites {name}")
    assert sorted(unregistered) == []
