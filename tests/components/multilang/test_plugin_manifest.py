"""provider/ as the Pulumi CLI reads it: the manifest, the entry point and what its virtualenv installs.

Upstream facts (pulumi/pulumi at v3.259.0, the newest tag in the store; the SDK here is 3.272.0):
- ``sdk/python/cmd/pulumi-language-python/main.go`` ``parseOptions``: a plugin's runtime options are
  ``virtualenv`` (a string; a plugin without one gets ``venv``), ``typechecker`` (mypy | pyright) and
  ``toolchain`` (pip | poetry | uv); ``RunPlugin`` runs ``python <plugin folder> <args>`` when the folder has
  ``__main__.py`` (otherwise ``python -m pulumi.run.plugin <pyproject name>``).
- ``sdk/python/toolchain/pip.go``: pip installs ``requirements.txt`` from the plugin folder (``pipCmd.Dir``).
- ``tests/integration/component_provider/python/component-provider-host/provider/PulumiPlugin.yaml``: the
  manifest's ``runtime`` is a mapping ``{name: python, options: {...}}``.
"""

from __future__ import annotations

import tomllib

import yaml

from tests.components.multilang.plugin_process import PLUGIN_DIR

TOOLCHAINS = ("pip", "poetry", "uv")
RUNTIME_OPTIONS = {"virtualenv", "typechecker", "toolchain"}


def test_the_manifest_names_the_python_runtime_with_options_the_language_host_knows():
    manifest = yaml.safe_load((PLUGIN_DIR / "PulumiPlugin.yaml").read_text())
    assert manifest["runtime"]["name"] == "python"
    options = manifest["runtime"]["options"]
    assert set(options) <= RUNTIME_OPTIONS and options["toolchain"] in TOOLCHAINS
    assert isinstance(options["virtualenv"], str)
    assert (PLUGIN_DIR / ".gitignore").read_text().split() == [f"{options['virtualenv']}/"]


def test_the_host_runs_the_folder_s_main_which_serves_the_components():
    main = (PLUGIN_DIR / "__main__.py").read_text()
    assert "from inference_platform.components.multilang.host import main" in main
    assert 'if __name__ == "__main__":' in main


def test_its_virtualenv_installs_this_repository_s_package():
    """pip runs in provider/, so ``..`` is the checkout the folder sits in; its dependencies at the core lock's exact
    versions (locks/core.txt, written by `make lock`: tests/test_locks.py keeps them equal)."""
    requirements = [
        line.strip()
        for line in (PLUGIN_DIR / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert requirements[-1] == ".." and all("==" in r for r in requirements[:-1])
    project = tomllib.loads((PLUGIN_DIR / ".." / "pyproject.toml").read_text())["project"]
    assert project["name"] == "inference-platform"
