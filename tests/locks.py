"""The locks, for tests that pin an upstream fact "as read at version X" (tools/lockfile.py reads them).

``locked_version(name)`` is X: the version of ``name`` the virtualenv's locks pin (locks/bootstrap.txt, app.txt,
dev.txt, triton.txt, markers evaluated here). ``require_locked(name)`` also fails, with the one "broken install"
sentence, when the installed version differs from it: the test then says nothing about upstream, only that `.venv`
is not what the locks say (`make venv` reinstalls it). ``read_at(name)`` is the version a vendored table or a
citation was read at (tools/deps_check/facts.py), and ``moved_past(name)`` the message a test gives when the lock
has moved past it: which facts to re-read.
"""

from __future__ import annotations

import functools
import importlib.metadata as md

import pytest

from tools.deps_check.facts import fact_for
from tools.lockfile import VENV_LOCKS, broken_install, expected, normalize


@functools.cache
def _pins() -> dict[str, str]:
    return {name: pin.version for name, pin in expected(VENV_LOCKS).items()}


def locked_version(name: str) -> str:
    """The version the virtualenv's locks pin for ``name`` here (KeyError naming it when none does)."""
    try:
        return _pins()[normalize(name)]
    except KeyError:
        raise KeyError(f"{name} is not in the virtualenv's locks ({', '.join(p.name for p in VENV_LOCKS)})") from None


def require_locked(name: str) -> str:
    """``locked_version(name)``, failing the test when the installed distribution is another version."""
    locked = locked_version(name)
    try:
        installed: str | None = md.version(name)
    except md.PackageNotFoundError:
        installed = None
    if installed != locked:
        pytest.fail(broken_install(name, installed, locked))
    return locked


def read_at(name: str) -> str:
    """The version of ``name`` the repository's vendored facts were read at (tools/deps_check/facts.py)."""
    return fact_for("pypi", name).read_at


def moved_past(name: str, cited: str | None = None) -> str:
    """What a test says when the lock pins another ``name`` than the facts (or the citation ``cited``) were read at."""
    fact = fact_for("pypi", name)
    return (
        f"the lock pins {name} {locked_version(name)}, the facts were read at {cited or fact.read_at}: "
        f"{fact.reread}; then set read_at in tools/deps_check/facts.py and the citations in {', '.join(fact.files)}"
    )
