"""mypy over every product package, with the project's configuration, from the repository root: 0 errors.

``-p inference_platform`` is the root package and, through the links tools/namespace_links.py lays out under
build/namespace (``[tool.mypy] mypy_path``), every folder setup.py maps into it; ``-p bench`` sits at the root.
pyproject.toml's ``[tool.mypy]`` holds the public surface to --strict's flags and the rest to checked function
bodies (docs/architecture.md, "Tools see the house"). The cache under build/ makes a rerun take seconds.

The same check by hand: ``.venv/bin/mypy -p inference_platform -p bench`` from the repository root.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.runtime_imports import FOLDERS, NAMESPACE, REPO
from tools import namespace_links

PACKAGES = (NAMESPACE, "bench")
CACHE = REPO / "build" / "mypy-cache"
# A "# type: ignore" names its error codes and says why on the same line (pyproject.toml [tool.mypy]).
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[a-z-]+(?:,\s*[a-z-]+)*\])?(?P<why>\s+#\s*\S)?")


def _product_files() -> list:
    files = [*(REPO / NAMESPACE).glob("*.py"), *(REPO / "bench").rglob("*.py")]
    for folder in FOLDERS:
        files += (REPO / folder).rglob("*.py")
    return files


# Rewrites of build/namespace (tests/test_tools_see_the_house.py) must not run while mypy reads it.
@pytest.mark.xdist_group("namespace-links")
@pytest.mark.timeout(900)
def test_every_package_type_checks():
    namespace_links.main(["--root", str(REPO / namespace_links.DEFAULT_ROOT)])
    packages = [arg for name in PACKAGES for arg in ("-p", name)]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), "--cache-dir", str(CACHE),
         *packages],
        cwd=REPO, capture_output=True, text=True, timeout=840, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    # warn_unused_configs only notes an override that matches no module: a stale one fails here.
    assert "unused section" not in result.stdout + result.stderr, result.stdout + result.stderr
    # Every product module was read: a folder missing from the namespace would only shrink the count.
    checked = re.search(r"no issues found in (\d+) source files", result.stdout)
    assert checked and int(checked[1]) >= len(_product_files()), result.stdout


def test_every_type_ignore_names_its_codes_and_why():
    bare = []
    for path in _product_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = IGNORE.search(line)
            if found and not (found["codes"] and found["why"]):
                bare.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert bare == [], "write `# type: ignore[code]  # why`:\n" + "\n".join(bare)
