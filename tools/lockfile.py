"""Reading the locks under ``locks/`` and comparing a virtualenv with them.

    python -m tools.lockfile sync --venv .venv locks/bootstrap.txt locks/app.txt ...

``sync`` (run by ``make venv`` and ``make checkov`` after pip installed the locks) removes every distribution the
locks do not pin (one a lock dropped, or one installed by hand), then fails, naming each, if the virtualenv still
differs: ``pip freeze --all --exclude-editable`` of the virtualenv must equal the locks. tests/test_locks.py makes
the same comparison for the virtualenv the suite runs in (``installed_differences``).

A pin applies where its marker holds: the locks are universal (``uv pip compile --universal``; guidellm.txt holds
one platform), so ``pywin32==312 ; sys_platform == 'win32'`` is a pin on Windows only.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.markers import Marker

REPO = Path(__file__).resolve().parents[1]
LOCKS = REPO / "locks"
VENV_LOCKS = tuple(LOCKS / name for name in ("bootstrap.txt", "app.txt", "dev.txt", "triton.txt"))
"""What `make venv` installs into .venv, in order (the editable project comes after, unpinned)."""
CHECKOV_LOCKS = tuple(LOCKS / name for name in ("bootstrap.txt", "checkov.txt"))
CLIENTS_LOCKS = tuple(LOCKS / name for name in ("bootstrap.txt", "clients.txt"))
GUIDELLM_LOCKS = tuple(LOCKS / name for name in ("bootstrap.txt", "guidellm.txt"))
PROJECT = "inference-platform"

_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<version>[^\s;\\]+)(?:\s*;\s*(?P<marker>[^\\]+?))?\s*\\?$"
)
_HASH = re.compile(r"--hash=(?P<algo>\w+):(?P<digest>[0-9a-f]+)")

# What a marker is evaluated against: the same keys as packaging.markers.default_environment(), read from another
# interpreter (the virtualenv's) without importing packaging there.
ENVIRONMENT_SCRIPT = """
import json, os, platform, sys
def v(info):
    version = "{0.major}.{0.minor}.{0.micro}".format(info)
    return version if info.releaselevel == "final" else version + info.releaselevel[0] + str(info.serial)
print(json.dumps({
    "implementation_name": sys.implementation.name,
    "implementation_version": v(sys.implementation.version),
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}))
"""

# Every installed distribution (name -> version), and whether it is an editable install (PEP 610 direct_url.json).
INSTALLED_SCRIPT = """
import importlib.metadata as md, json
rows = {}
for dist in md.distributions():
    url = dist.read_text("direct_url.json")
    editable = bool(url and json.loads(url).get("dir_info", {}).get("editable"))
    rows[dist.metadata["Name"]] = [dist.version, editable]
print(json.dumps(rows))
"""


def normalize(name: str) -> str:
    """PEP 503's normal form: ``Ruamel.YAML`` and ``ruamel-yaml`` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclasses.dataclass(frozen=True)
class Pin:
    """One ``name==version`` of a lock, with the marker saying where it applies and the hashes of its files."""

    name: str
    version: str
    marker: str | None
    hashes: tuple[str, ...]
    lock: Path

    def applies(self, environment: Mapping[str, str] | None = None) -> bool:
        return self.marker is None or Marker(self.marker).evaluate(dict(environment) if environment else None)


def read_lock(path: Path) -> list[Pin]:
    """The pins of a lock, continuation lines joined (uv writes each hash on a line of its own)."""
    found: list[Pin] = []
    joined = re.sub(r"\\\n", " ", path.read_text())
    for raw in joined.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "--")):  # a comment, or pip's own option (``--find-links DIR``)
            continue
        requirement = line.split(" --hash=", 1)[0].strip()
        match = _PIN.match(requirement)
        if not match:
            raise ValueError(f"{path}: not an exact pin: {requirement}")
        hashes = tuple(f"{m['algo']}:{m['digest']}" for m in _HASH.finditer(line))
        marker = match["marker"].strip() if match["marker"] else None
        found.append(Pin(normalize(match["name"]), match["version"], marker, hashes, path))
    return found


def expected(locks: Iterable[Path], environment: Mapping[str, str] | None = None) -> dict[str, Pin]:
    """name -> the pin that applies in ``environment`` (this interpreter's by default), over several locks.
    Two locks pinning one distribution to two versions is an error: one virtualenv cannot hold both."""
    chosen: dict[str, Pin] = {}
    for path in locks:
        for pin in read_lock(path):
            if not pin.applies(environment):
                continue
            other = chosen.get(pin.name)
            if other and other.version != pin.version:
                raise ValueError(
                    f"{pin.name}: {other.lock.name} pins {other.version}, {path.name} pins {pin.version}: run `make lock`"
                )
            chosen.setdefault(pin.name, pin)
    return chosen


def broken_install(name: str, installed: str | None, locked: str | None, venv: str = ".venv") -> str:
    """The one sentence every lock check says when an environment is not what its locks pin."""
    where = "not installed" if installed is None else f"{installed} installed"
    lock = "not in the locks" if locked is None else f"the lock says {locked}"
    return f"broken install: {name} {where}, {lock}: run `make venv` to reinstall {venv} from the locks"


def differences(installed: Mapping[str, str], pins: Mapping[str, Pin], venv: str = ".venv") -> list[str]:
    """One ``broken install`` line per distribution whose installed version differs from its pin, is missing, or is
    installed without a pin (``installed`` maps normalized names to versions, editable installs left out)."""
    lines = []
    for name in sorted(installed.keys() | pins.keys()):
        have, pin = installed.get(name), pins.get(name)
        if have is None or pin is None or have != pin.version:
            lines.append(broken_install(name, have, pin.version if pin else None, venv))
    return lines


def _interpreter_json(python: Path, script: str) -> dict:
    result = subprocess.run([str(python), "-I", "-c", script], capture_output=True, text=True, check=True, timeout=120)
    return json.loads(result.stdout)


def venv_state(venv: Path) -> tuple[dict[str, str], dict[str, str], set[str]]:
    """(marker environment, installed name -> version without editables, editable names) of a virtualenv."""
    python = venv / "bin" / "python"
    environment = _interpreter_json(python, ENVIRONMENT_SCRIPT)
    rows = _interpreter_json(python, INSTALLED_SCRIPT)
    installed = {normalize(name): version for name, (version, editable) in rows.items() if not editable}
    editable = {normalize(name) for name, (_, editable) in rows.items() if editable}
    return environment, installed, editable


def sync(venv: Path, locks: list[Path]) -> int:
    """Uninstall what the locks do not pin from ``venv``, then report any remaining difference (exit 1)."""
    environment, installed, _ = venv_state(venv)
    pins = expected(locks, environment)
    extra = sorted(name for name in installed if name not in pins)
    if extra:
        print(f"{venv}: removing what the locks do not pin: {' '.join(extra)}")
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "--quiet", "--yes", *extra], check=True)
        environment, installed, _ = venv_state(venv)
    problems = differences(installed, pins, str(venv))
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.lockfile")
    commands = parser.add_subparsers(dest="command", required=True)
    sync_parser = commands.add_parser("sync", help="make a virtualenv hold exactly what its locks pin")
    sync_parser.add_argument("--venv", type=Path, required=True)
    sync_parser.add_argument("locks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    return sync(args.venv, args.locks)


if __name__ == "__main__":
    sys.exit(main())
