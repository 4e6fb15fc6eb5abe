"""Every ``inferctl`` parser, down to sub-sub-commands, has a description, its command's exit status and help
for every flag and argument; ``--version`` prints the distribution's version."""

from __future__ import annotations

import argparse

import pytest

from inference_platform import __version__
from inference_platform.inferctl.cli import COMMANDS, EXIT_CODES, build_parser, main


def _parsers(parser: argparse.ArgumentParser, path: str = "inferctl"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


PARSERS = dict(_parsers(build_parser()))


def test_the_tree_holds_every_command():
    assert {path.split()[1] for path in PARSERS if path != "inferctl"} == set(COMMANDS) == set(EXIT_CODES)


@pytest.mark.parametrize("path", sorted(PARSERS))
def test_each_parser_has_a_description_exit_codes_and_help_for_every_flag(path):
    parser = PARSERS[path]
    assert parser.description and parser.description.strip(), f"{path}: no description"
    if path != "inferctl":
        assert (parser.epilog or "").startswith(f"exit status: {EXIT_CODES[path.split()[1]]}; "), path
    undocumented = [
        "/".join(action.option_strings) or action.dest
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not (action.help and action.help.strip())
    ]
    assert not undocumented, f"{path}: no help for {undocumented}"
    text = parser.format_help()
    assert "usage:" in text and (path == "inferctl" or "exit status:" in text)


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"inferctl {__version__}\n"
