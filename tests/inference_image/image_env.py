"""The images' Python environments, rebuilt from their Dockerfiles without the base image.

``pip_steps(dockerfile)`` reads the ``pip install`` invocations of a Dockerfile's RUN instructions (ARG
defaults substituted, ``/src`` the bind-mounted build context, ``/tmp/...`` a scratch folder, ``NAME=value``
before the command its environment); ``build_context(dockerfile, dest)`` copies the repository as the
Dockerfile's ``.dockerignore`` lets BuildKit see it; ``image_env(dockerfile)`` replays the steps into a
virtualenv under ``build/image-env/`` keyed by a hash of every input, so reruns are fast.
The steps install from locks (locks/, exact versions with hashes, --no-deps), so the environment is the same
on any day; ``image_env`` checks that every distribution in it is one a lock pins (``not_locked``).
What the base image preinstalls cannot be installed here and is left out (``BASE_IMAGE_ONLY``): the tests
prove the entrypoints do not need it to start.
"""

from __future__ import annotations

import dataclasses
import fcntl
import glob
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IMAGE = REPO / "inference_image"
CACHE = REPO / "build" / "image-env"
SRC = "/src"  # where the Dockerfiles bind-mount the build context (RUN --mount=type=bind,target=/src)
SCRATCH = "/tmp/"  # a RUN's scratch folders (--mount=type=tmpfs): replayed under the test's work folder
LOCKS = REPO / "locks"
PIP_TIMEOUT = 600
# Bump to throw away every cached environment (a change to how they are built).
LAYOUT = "3"

# What a Dockerfile's pip steps install on top of packages only its base image has, and why they are not
# installed here. A requirement whose version is a build argument without a default (the Neuron SDK: one
# release's versions are chosen at build time) cannot be resolved at all; the rest are not on PyPI in a form
# that installs on this machine (GPU builds) or weigh gigabytes. None of them is imported before an
# entrypoint reaches its accelerator: the tests below run every entrypoint without them.
BASE_IMAGE_ONLY = {
    "Dockerfile": (
        "nvcr.io/nvidia/tritonserver:*-trtllm-python-py3 ships tritonserver, tensorrt_llm, torch, transformers "
        "and tokenizers (base_image_constraints.txt): NGC-only or GPU builds of several GB, not installed"
    ),
    "Dockerfile.neuron": (
        "neuronx-cc, torch-neuronx and neuronx-distributed-inference come from Neuron's own index at versions "
        "given only as required build arguments (no default): not installed"
    ),
}


# What a base image ships that the entrypoints do import, installed here in its place: the project's own
# range (pyproject.toml), since the base's exact version is not recorded, at the application lock's versions
# (locks/app.txt as constraints, so the stand-ins and what they bring are the same on any day). nvcr.io's Triton + TensorRT-LLM
# image carries tokenizers (with transformers, base_image_constraints.txt), which the pod's OpenAI server loads
# the model's tokenizer.json with. (No entrypoint imports tritonclient since smoke and verify speak OpenAI.)
BASE_IMAGE_STAND_INS: dict[str, tuple[str, ...]] = {
    "Dockerfile": ("tokenizers",),
    "Dockerfile.neuron": (),
}


def image_name(dockerfile: Path) -> str:
    """The key of an image in the tables above and in the cache: ``Dockerfile*`` for inference_image's,
    ``<folder>-Dockerfile`` for another folder's (batch/Dockerfile), so two images never share a cache."""
    return dockerfile.name if dockerfile.parent == IMAGE else f"{dockerfile.parent.name}-{dockerfile.name}"


def stand_in_requirements(dockerfile: Path) -> list[str]:
    """The stand-ins of ``dockerfile``'s base image as requirements with pyproject.toml's ranges."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]
    by_name = {Requirement(d).name.lower(): d for d in declared}
    return [by_name[name] for name in BASE_IMAGE_STAND_INS.get(image_name(dockerfile), ())]


@dataclasses.dataclass(frozen=True)
class PipStep:
    """One ``pip install`` of a Dockerfile: its arguments after ``install``, ARGs substituted."""

    args: tuple[str, ...]
    unresolved: tuple[str, ...]
    """Build arguments the step needs that have no default (the step cannot be replayed)."""
    env: tuple[tuple[str, str], ...] = ()
    """``NAME=value`` assignments before the command (``PYTHONPATH=/tmp/bootstrap python3 -m pip ...``)."""

    @property
    def installs_context(self) -> bool:
        return SRC in self.args

    @property
    def into_scratch(self) -> bool:
        """Installs into a scratch folder (``--target /tmp/...``), not the environment: tools for a later step."""
        return any(
            flag == "--target" and value.startswith(SCRATCH)
            for flag, value in zip(self.args, self.args[1:], strict=False)
        )

    def files(self) -> list[Path]:
        """The requirement and constraint files the step reads, in the repository."""
        found = []
        for flag, value in zip(self.args, self.args[1:], strict=False):
            if flag in ("-r", "--requirement", "-c", "--constraint"):
                found.append(context_path(value))
        return found


def context_path(value: str, context: Path = REPO) -> Path:
    assert value == SRC or value.startswith(f"{SRC}/"), f"{value}: not in the build context ({SRC})"
    return context / value[len(SRC) :].lstrip("/")


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(instruction, rest) for each instruction, continuation lines joined and comments dropped."""
    lines = [line for line in dockerfile.read_text().splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        match = re.match(r"^([A-Z]+)\s+(.*)$", line.strip())
        if match:
            found.append((match.group(1), match.group(2)))
    return found


def build_args(dockerfile: Path) -> dict[str, str | None]:
    """Each ARG and its default (None: required at build time)."""
    found: dict[str, str | None] = {}
    for instruction, rest in instructions(dockerfile):
        if instruction == "ARG":
            name, eq, default = rest.partition("=")
            found[name.strip()] = default.strip() if eq else None
    return found


def _substitute(token: str, args: dict[str, str | None], unresolved: list[str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        default = args.get(name)
        if default is None:
            unresolved.append(name)
            return f"${{{name}}}"
        return default

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", value, token)


def _commands(tokens: list[str]) -> Iterator[list[str]]:
    """The simple commands of a shell token list (split at ``&&``, ``||``, ``;``, ``|`` and parentheses)."""
    command: list[str] = []
    for token in tokens:
        if token and set(token) <= set("&|;()"):
            yield command
            command = []
        else:
            command.append(token)
    yield command


def pip_steps(dockerfile: Path) -> list[PipStep]:
    """Every ``pip install`` / ``python -m pip install`` in the RUN instructions, in order."""
    args = build_args(dockerfile)
    steps = []
    for instruction, rest in instructions(dockerfile):
        if instruction != "RUN":
            continue
        shell = re.sub(r"^(--\S+\s+)+", "", rest)  # RUN flags (--mount=...)
        lexer = shlex.shlex(shell, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        for tokens in _commands(list(lexer)):
            assignments = []
            while tokens and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", tokens[0]):
                assignments.append(tuple(tokens.pop(0).split("=", 1)))
            for i in range(len(tokens) - 1):
                if re.fullmatch(r"(\S*/)?pip3?", tokens[i]) and tokens[i + 1] == "install":
                    unresolved: list[str] = []
                    resolved = tuple(_substitute(t, args, unresolved) for t in tokens[i + 2 :])
                    env = tuple((k, _substitute(v, args, unresolved)) for k, v in assignments)
                    steps.append(PipStep(resolved, tuple(dict.fromkeys(unresolved)), env))
                    break
    return steps


def entrypoint(dockerfile: Path) -> list[str]:
    """The exec-form ENTRYPOINT of a Dockerfile."""
    (found,) = [json.loads(rest) for ins, rest in instructions(dockerfile) if ins == "ENTRYPOINT"]
    return found


RUN_ELSEWHERE = REPO / "components" / "verification"
"""The verification Job and the load test run the verification image (infra/verification.py, issue 28), whose own
test (tests/inference_image/test_verification_image.py) runs their commands in its environment."""


def image_commands() -> set[tuple[str, ...]]:
    """Every ``inferctl <command> [<sub-command>]`` the serving images run: their Dockerfiles' ENTRYPOINT, and what the
    components' pods and Jobs name (``["inferctl", "serve", ...]`` lists and shell strings in their sources), but
    those of ``RUN_ELSEWHERE``."""
    from inference_platform.inferctl.cli import COMMANDS

    entrypoints = [entrypoint(d) for d in sorted(IMAGE.glob("Dockerfile*")) if d.suffix != ".dockerignore"]
    # An image that runs its own module (python3 -m inference_platform.inference_image.serve) runs no CLI command.
    found = {tuple(e[:2]) for e in entrypoints if e[0] == "inferctl"}
    quoted = r"[\"']?,?\s*[\"']?"
    pattern = re.compile(rf"[\"']inferctl{quoted}([a-z][a-z-]*)(?:{quoted}([a-z][a-z-]*))?")
    for path in (REPO / "components").rglob("*.py"):
        if path.is_relative_to(RUN_ELSEWHERE):
            continue
        for command, sub in pattern.findall(path.read_text()):
            if command in COMMANDS:
                found.add(("inferctl", command, *([sub] if sub else [])))
    return found


def venv_python_version(dockerfile: Path) -> str:
    """The image's Python: the ``pythonX.Y -m venv`` of the Dockerfile, else the ``# python: X.Y`` its base
    image's constraint file records (base_image_constraints.txt, which its lock was compiled with)."""
    text = dockerfile.read_text()
    match = re.search(r"\bpython(\d+\.\d+) -m venv\b", text)
    if match:
        return match.group(1)
    from tools.lock import COMMITTED

    compiled_with = {lock.path: lock.constraints for lock in COMMITTED}
    for step in pip_steps(dockerfile):
        # A lock the step installs was compiled with the base's constraint file (tools/lock.py): read that.
        for path in [c for f in step.files() for c in (f, *compiled_with.get(f, ())) if c.suffix == ".txt"]:
            found = re.search(r"^# python: (\d+\.\d+)$", path.read_text(), re.MULTILINE)
            if found:
                return found.group(1)
    raise AssertionError(f"{dockerfile.name}: neither a `pythonX.Y -m venv` nor a `# python:` constraint")


def interpreter(version: str) -> tuple[str, str | None]:
    """An interpreter of ``version`` on this machine, and a note when none is and this one stands in."""
    candidates = [shutil.which(f"python{version}"), *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")))]  # fmt: skip
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, check=False)  # fmt: skip
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate, None
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return sys.executable, None if here == version else f"no Python {version} here: the environment uses {here}"


def _dockerignore(dockerfile: Path) -> list[tuple[bool, re.Pattern[str]]]:
    """BuildKit's per-Dockerfile ignore file (``<Dockerfile>.dockerignore``) as (exclude, pattern) rules."""
    rules = []
    for raw in dockerfile.with_name(f"{dockerfile.name}.dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = "".join(
            ".*" if part == "**" else "[^/]*" if part == "*" else "[^/]" if part == "?" else re.escape(part)
            for part in re.split(r"(\*\*|\*|\?)", pattern)
        )
        rules.append((not include, re.compile(regex.replace(".*/", "(.*/)?"))))
    return rules


def _excluded(rules: list[tuple[bool, re.Pattern[str]]], rel: str) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parents = [rel] + ["/".join(rel.split("/")[:i]) for i in range(1, rel.count("/") + 1)]
    excluded = False
    for exclude, pattern in rules:
        if any(pattern.fullmatch(p) for p in parents):
            excluded = exclude
    return excluded


def context_files(dockerfile: Path) -> Iterator[Path]:
    """The repository files the build context holds (git's own and untracked, never .git or venvs)."""
    rules = _dockerignore(dockerfile)
    for root, dirs, files in os.walk(REPO):
        rel_root = Path(root).relative_to(REPO).as_posix()
        rel_root = "" if rel_root == "." else f"{rel_root}/"
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("build", "node_modules"))
        for name in sorted(files):
            if not _excluded(rules, f"{rel_root}{name}"):
                yield Path(root, name)


def build_context(dockerfile: Path, dest: Path) -> str:
    """Copy the build context to ``dest``; returns a hash of its contents."""
    digest = hashlib.sha256()
    for path in context_files(dockerfile):
        rel = path.relative_to(REPO)
        digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest / rel)
    return digest.hexdigest()


@dataclasses.dataclass(frozen=True)
class ImageEnv:
    dockerfile: Path
    venv: Path
    notes: tuple[str, ...]
    """What differs from the image: steps left out (the base image's packages), the interpreter."""
    seconds: float

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


NO_BYTECODE_NOTE = "no bytecode compiled at install (the image's pip compiles every module; Python does it on import)"


def _pip(python: Path, args: list[str], log: Path, env: dict[str, str] | None = None) -> None:
    # --no-compile: byte-compiling every installed module was most of these installs' CPU (the locks' large packages),
    # and .pyc files change nothing a command here does (NO_BYTECODE_NOTE says so in each environment's notes).
    cmd = [str(python), "-m", "pip", "install", "--quiet", "--no-compile", *args]
    environ = {**os.environ, **(env or {})}
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT, check=False, env=environ)
    with log.open("a") as out:
        out.write(f"$ {shlex.join(cmd)}\n{result.stdout}{result.stderr}\n")
    assert result.returncode == 0, f"{shlex.join(cmd)} failed:\n{result.stderr[-4000:]}"


def image_env(dockerfile: Path, work: Path, *, before_pip: Callable[[], None] = lambda: None) -> ImageEnv:
    """The image's environment in a venv (built, or reused when no input changed); ``work`` is scratch.
    ``before_pip`` runs before the first pip install, if any (a check that the index answers)."""
    import time

    started = time.monotonic()
    steps = pip_steps(dockerfile)
    assert any(s.installs_context for s in steps), f"{dockerfile.name} never installs the package ({SRC})"
    version = venv_python_version(dockerfile)
    python, python_note = interpreter(version)
    notes = [python_note] if python_note else []
    notes.append(NO_BYTECODE_NOTE)
    skipped = [s for s in steps if s.unresolved]
    if skipped:
        notes.append(BASE_IMAGE_ONLY[image_name(dockerfile)])
    stand_ins = stand_in_requirements(dockerfile)
    if stand_ins:
        notes.append(
            f"the base image's own packages replaced by: {', '.join(stand_ins)} (pyproject.toml ranges, locks/app.txt)"
        )
    inputs = {
        "stand_ins": stand_ins,
        "stand_in_lock": (LOCKS / "app.txt").read_text() if stand_ins else "",
        "env": [list(s.env) for s in steps],
        "layout": LAYOUT,
        "python": subprocess.run([python, "-VV"], capture_output=True, text=True, check=True).stdout.strip(),
        "steps": [list(s.args) for s in steps],
        "files": {str(p.relative_to(REPO)): p.read_text() for s in steps for p in s.files()},
    }
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    CACHE.mkdir(parents=True, exist_ok=True)
    name = image_name(dockerfile)
    venv = CACHE / f"{name}-{key}"
    context = work / "src"
    source_hash = build_context(dockerfile, context)
    with (CACHE / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ready = venv / ".image-env-ready"
        if not ready.exists():
            for stale in CACHE.glob(f"{name}-*"):
                shutil.rmtree(stale, ignore_errors=True)
            # --system-site-packages stays off: nothing of this machine's Python leaks in.
            subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=120)
        venv_python = venv / "bin" / "python"
        log = venv / "install.log"
        stamp = venv / f".src-{source_hash[:16]}"
        replayable = [s for s in steps if not s.unresolved]
        context_pending = any(s.installs_context for s in replayable) and not stamp.exists()
        # A cached environment reinstalls only the package; the scratch tools its build needs are laid anew.
        pending = [
            s for s in replayable if not ready.exists() or (context_pending and (s.installs_context or s.into_scratch))
        ]
        if pending or (stand_ins and not ready.exists()):
            before_pip()
        scratch = work / "scratch"
        for step in pending:
            args = [_replayed(a, context, scratch) for a in step.args]
            if step.installs_context and ready.exists():
                args = ["--force-reinstall", *args]
            _pip(venv_python, args, log, {k: _replayed(v, context, scratch) for k, v in step.env})
        if stand_ins and not ready.exists():
            constraints = work / "stand-in-constraints.txt"
            constraints.write_text("".join(f"{line}\n" for line in _pin_lines(LOCKS / "app.txt")))
            _pip(venv_python, [*stand_ins, "--constraint", str(constraints)], log)
        unlocked = not_locked(venv, [p for s in replayable for p in s.files() if p.parent == LOCKS], bool(stand_ins))
        assert unlocked == [], (
            f"{name}: the environment holds what no lock pins (not the same on another day): {unlocked}"
        )
        for old in venv.glob(".src-*"):
            old.unlink()
        stamp.touch()
        ready.touch()
    return ImageEnv(dockerfile, venv, tuple(notes), time.monotonic() - started)


def _replayed(value: str, context: Path, scratch: Path) -> str:
    """A Dockerfile path as replayed here: the build context's copy, or the scratch folder under the work folder."""
    if value == SRC or value.startswith(f"{SRC}/"):
        return str(context_path(value, context))
    if value.startswith(SCRATCH):
        return str(scratch / value[len(SCRATCH) :])
    return value


def _pin_lines(lock: Path) -> list[str]:
    from tools.lockfile import read_lock

    return [f"{p.name}=={p.version}{f' ; {p.marker}' if p.marker else ''}" for p in read_lock(lock)]


def not_locked(venv: Path, locks: list[Path], stand_ins: bool) -> list[str]:
    """Each distribution of the environment that no lock of its Dockerfile's steps (nor, for the base image's stand-ins,
    the application lock) pins at its version. The interpreter's own pip and our package are left out."""
    from tools.lockfile import PROJECT, expected, venv_state

    environment, installed, _ = venv_state(venv)
    pins = expected([*locks, *([LOCKS / "app.txt"] if stand_ins else [])], environment)
    return sorted(
        f"{name} {version} (locked: {pins[name].version if name in pins else 'no'})"
        for name, version in installed.items()
        if name not in ("pip", PROJECT) and (name not in pins or pins[name].version != version)
    )


def image_import_roots() -> dict[str, bool | tuple[str, ...]]:
    """What the images run, as roots for tests/runtime_imports.py ``closure``: each command they run (its
    handler runs, so its function-level imports count), every module of ``inference_image`` (Triton runs its
    models, the entrypoint renders from them) and of ``inference_platform.settings``, and the CLI, which imports every
    command module and runs its ``register`` to build the parser."""
    from inference_platform.inferctl.cli import COMMANDS
    from tests.runtime_imports import MODULES

    roots: dict[str, bool | tuple[str, ...]] = {
        m: True
        for m in MODULES
        if m.startswith("inference_platform.inference_image")
        or m == "inference_platform.settings"
        or m.startswith("inference_platform.settings.")
    }
    roots.update({COMMANDS[argv[1]]: True for argv in image_commands()})
    roots["inference_platform.inferctl.cli"] = True
    for module in COMMANDS.values():
        roots.setdefault(module, ("register",))
    return roots
