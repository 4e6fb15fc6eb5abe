"""The README is the front door (docs/architecture.md, issue 28's new user): its Quickstart gives exactly the two
commands, `make plan` and `make test`, as a new user types them; CI runs the README's test command on a clean
clone; and the README says how to run the stack on this machine (`make serve-local`) and where its page is."""

from __future__ import annotations

import re

from tests.runtime_imports import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def commands(text: str) -> list[str]:
    """The commands of the first shell block, comments dropped."""
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "no shell block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.split("#", 1)[0].strip()]


def test_the_quickstart_is_exactly_make_plan_and_make_test():
    assert commands(section("Quickstart")) == ["make plan", "make test"]


def test_ci_runs_the_readmes_test_command():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^make test\b", ci, re.M), "the CI entry point runs `make test` as the README gives it"


def test_make_plan_and_make_test_build_the_virtualenv_themselves():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for target in ("plan", "test"):
        prerequisites = re.search(rf"^{target}:([^\n]*)", makefile, re.M)
        assert prerequisites and "venv" in prerequisites.group(1).split(), f"make {target} on a clean clone"


def test_the_readme_says_how_to_run_it_locally_and_trust_its_ca():
    local = section("Running it on this machine")
    assert commands(local) == ["make serve-local"]
    for words in ("/v1", "model id", "key file", "CA", "make serve-local BATCH=1", "(docs/serve-local.md)"):
        assert words in local, words
