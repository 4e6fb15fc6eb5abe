"""Every name the docs give a user exists (issue 28: pages still described the removed TensorRT engine flow, and
docs/edge.md contradicted docs/batch.md).

Read: README.md, every page of docs/, inference_image/README.md, the descriptions of Pulumi.yaml's keys and every
``inferctl ... --help`` text (descriptions, epilogs, each option's help). Candidates are found by pattern and each is
checked against what is real:

- an ``inferctl`` command or sub-command against the CLI's parser tree; a ``--flag`` against the command it is given
  to (a code span or line starting ``inferctl <command>``, a table row naming one) or, in help texts, any command;
- a settings key (``serving.maxInputLen``, ``nodePools.<pool>.minSize``, ``inference-platform:batch``) against the
  settings schema (the sections' pydantic models, by the camelCase names stack files use; a key the schema keeps
  only to refuse it with what replaces it, ``retired_keys``, counts as named on purpose); in Pulumi.yaml a key's
  description names its fields as ``field {sub, sub}``: each against the section;
- a file or folder of this repository (a path whose first part is one of its top-level names, or relative to the
  page) against the tree, and a markdown link's target (and ``#anchor``) against the pages;
- ``inference_platform.<module>[.<name>]`` against the installed package;
- ``make <target> [VAR=...]`` against the Makefile's targets and variables.

Upstream files a page cites by path (read at a tag, not ours) are listed in UPSTREAM_PATHS.
"""

from __future__ import annotations

import argparse
import importlib
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, RootModel

from inference_platform.inferctl.cli import build_parser
from inference_platform.settings import SCALAR_KEYS, SECRET_KEYS, SECTIONS
from tests.runtime_imports import REPO

PAGES = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), REPO / "inference_image" / "README.md"])
UPSTREAM_PATHS = frozenset(
    {
        # TensorRT-LLM's own docs tree (REFERENCE §12): the removal of the TensorRT backend.
        "docs/source/legacy/tensorrt-backend-removal.md",
        # triton-inference-server/server at r26.08: its support matrix.
        "docs/introduction/compatibility.md",
    }
)
REMOVED_MENTIONS = {
    # A page may say a file was removed, by name; each such mention is listed here, with its page.
    ("docs/serving.md", "inference_image/repository.py"),
}
EXTERNAL_FLAGS = {
    # Flags of other programs a help text names: the flag, and the program it belongs to.
    "--backend-directory": "tritonserver (inferctl serve passes it)",
}
TOP_LEVEL = frozenset(p.name for p in REPO.iterdir() if not p.name.startswith("."))
GENERATED = ("build/", "provider/venv")
"""Paths the tools write (plans, reports, serve-local's work dir, the Pulumi CLI's provider virtualenv): they exist
after a run, not in the tree."""
NOT_KEYS = frozenset({"md", "py", "yaml", "yml", "json", "txt", "toml", "go", "sh", "com", "aws", "local", "io"})
"""A dotted name ending in one of these is a file or a host (``docs/batch.md``, ``autoscaling.amazonaws.com``)."""


@dataclass(frozen=True)
class Text:
    where: str
    body: str
    page: Path | None = None
    """The markdown page (links and relative paths resolve from its folder); None for help texts and descriptions."""
    command: tuple[str, ...] = ()
    """The inferctl command a help text belongs to."""


# --- what is real -----------------------------------------------------------------------------------------------


def _parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        found[path] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, (*path, name))

    walk(build_parser(), ())
    return found


PARSERS = _parsers()


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def flags_under(path: tuple[str, ...]) -> set[str]:
    """A command's flags and its sub-commands' (``inferctl loadtest --url`` is ``loadtest run``'s)."""
    return {f for p, parser in PARSERS.items() if p[: len(path)] == path for f in _flags(parser)}


ALL_FLAGS = flags_under(())


def makefile() -> tuple[set[str], set[str]]:
    text = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", text, re.M))
    variables = set(re.findall(r"^([A-Z_][A-Z0-9_]*)\s*[?:]?=", text, re.M))
    return targets, variables


TARGETS, MAKE_VARIABLES = makefile()
SECTION_MODELS = {s.key: s for s in SECTIONS}


def _unwrap(annotation: Any) -> list[Any]:
    """The types a field's annotation may hold, optionals and unions opened."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg) if t is not type(None)]
    return [annotation]


def _children(model: Any) -> dict[str, Any] | None:
    """camelCase field name -> annotation of a pydantic model; None for a map of free keys (handled by caller)."""
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items()}


def key_exists(segments: list[str], model: Any = None) -> bool:
    """Whether ``segments`` name a key of the schema: each a field (by its camelCase name) or a retired key the
    model refuses; a map's key is any name (placeholders ``<pool>`` included); ``x*`` is any field starting ``x``."""
    if not segments:
        return True
    if model is None:
        head, rest = segments[0], segments[1:]
        if head in SCALAR_KEYS or head in SECRET_KEYS:
            return not rest
        return head in SECTION_MODELS and key_exists(rest, SECTION_MODELS[head])
    for option in _unwrap(model):
        origin = typing.get_origin(option)
        if origin in (dict, typing.Mapping) or (isinstance(origin, type) and issubclass(origin, dict)):
            if key_exists(segments[1:], typing.get_args(option)[1]):
                return True
            continue
        if origin in (list, tuple):
            if key_exists(segments, typing.get_args(option)[0]):
                return True
            continue
        if isinstance(option, type) and issubclass(option, RootModel):
            if key_exists(segments, option.model_fields["root"].annotation):
                return True
            continue
        if not (isinstance(option, type) and issubclass(option, BaseModel)):
            continue
        head, rest = segments[0], segments[1:]
        fields = _children(option) or {}
        if head.endswith("*"):
            if any(name.startswith(head[:-1]) for name in fields):
                return True
            continue
        if head in fields and key_exists(rest, fields[head]):
            return True
        if head in getattr(option, "retired_keys", {}) and not rest:
            return True
    return False


# --- what the docs say ------------------------------------------------------------------------------------------


def texts() -> Iterator[Text]:
    for page in PAGES:
        yield Text(str(page.relative_to(REPO)), page.read_text(encoding="utf-8"), page=page)
    config = yaml.safe_load((REPO / "Pulumi.yaml").read_text())["config"]
    for key, declaration in config.items():
        if isinstance(declaration, dict) and declaration.get("description"):
            yield Text(f"Pulumi.yaml {key}", declaration["description"])
    for path, parser in PARSERS.items():
        name = "inferctl " + " ".join(path) if path else "inferctl"
        parts = [parser.description or "", parser.epilog or ""]
        parts += [a.help or "" for a in parser._actions if a.help and a.help != argparse.SUPPRESS]
        yield Text(f"{name} --help", "\n".join(parts), command=path)


def code_spans(text: Text) -> list[str]:
    """Inline code and the lines of fenced blocks (shell-like ones: a Python or YAML block is not a command)."""
    if text.page is None:
        return [text.body]
    spans = []
    for lang, block in re.findall(r"```([a-z]*)\n(.*?)```", text.body, re.S):
        if lang in ("", "sh", "shell", "bash", "console", "text"):
            spans += block.splitlines()
    prose = re.sub(r"```.*?```", "", text.body, flags=re.S)
    spans += re.findall(r"`([^`\n]+)`", prose)
    return spans


INFERCTL = re.compile(r"(?<![\w/.-])inferctl((?:\s+[a-z][a-z-]*)*)((?:\s+[^|`\n]*)?)")


def inferctl_references(text: Text) -> Iterator[tuple[str, tuple[str, ...], str]]:
    """(what, command path, the rest of the line) for each ``inferctl ...`` in code, tables and help texts."""
    sources = code_spans(text)
    if text.page is not None:
        # A docs table row naming a command in its first cell: the row's flags are that command's.
        for row in re.findall(r"^\|\s*`(inferctl [^`]+)`\s*\|(.*)$", text.body, re.M):
            sources.append(row[0] + " " + " ".join(re.findall(r"`(--[a-z][a-z0-9-]*)", row[1])))
    for source in sources:
        for match in INFERCTL.finditer(source):
            words = match.group(1).split()
            path: tuple[str, ...] = ()
            for word in words:
                if (*path, word) not in PARSERS:
                    break
                path = (*path, word)
            rest = words[len(path) :]
            has_children = any(len(p) > len(path) and p[: len(path)] == path for p in PARSERS)
            if rest and has_children:
                # The next word after a command with sub-commands must be one of them.
                what = f"inferctl {' '.join(path)} sub-command" if path else "inferctl command"
                yield (f"{what} {rest[0]!r}", path, "")
                continue
            yield ("", path, " ".join(rest) + match.group(2))


def problems_of(text: Text) -> Iterator[str]:
    yield from _command_problems(text)
    yield from _key_problems(text)
    yield from _path_problems(text)
    yield from _module_problems(text)
    yield from _make_problems(text)
    if text.where.startswith("Pulumi.yaml"):
        yield from _description_field_problems(text)


def _command_problems(text: Text) -> Iterator[str]:
    for what, path, rest in inferctl_references(text):
        if what:
            yield f"{text.where}: {what} does not exist"
            continue
        known = flags_under(path)
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest):
            if flag not in known:
                yield f"{text.where}: inferctl {' '.join(path)} has no {flag}"
    if text.command:
        # A help text may name another command's flags (smoke's --ca-file: "serve-local --edge prints it").
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text.body):
            if flag not in ALL_FLAGS and flag not in EXTERNAL_FLAGS:
                yield f"{text.where}: no inferctl command has {flag}"


SECTION_NAMES = "|".join(sorted(SECTION_MODELS, key=len, reverse=True))
DOTTED_KEY = re.compile(
    rf"(?<![\w./:<-])((?:{SECTION_NAMES})(?:\.(?:[a-z][A-Za-z0-9]*\*?|<[a-z-]+>))+)(?![\w(/-]|\.[a-z])"
)
NAMESPACED = re.compile(r"inference-platform:([A-Za-z]+)(?![:\w])")
"""``inference-platform:batch`` (a stack file's key), not ``inference-platform:index:Network`` (a type token)."""


def _key_problems(text: Text) -> Iterator[str]:
    body = text.body if text.page is None else re.sub(r"```(python|typescript|yaml)\n.*?```", "", text.body, flags=re.S)
    for match in DOTTED_KEY.finditer(body):
        key = match.group(1)
        segments = key.split(".")
        # An error message quoted on a page names the misspelled key it refuses.
        refused = body[match.end() : match.end() + 14] == ": unknown key "
        if segments[-1] not in NOT_KEYS and not refused and not key_exists(segments):
            yield f"{text.where}: settings key {key} does not exist"
    for section in NAMESPACED.findall(body):
        if section not in SECTION_MODELS and section not in SCALAR_KEYS and section not in SECRET_KEYS:
            yield f"{text.where}: inference-platform:{section} is no settings key"


PATH = re.compile(
    r"(?<![\w@:/.<-])((?:[A-Za-z0-9_.<>{}*-]+/)+[A-Za-z0-9_.<>{}*-]*|[A-Za-z0-9_-]+\.(?:py|md|yaml|yml|json|txt|toml))"
)
"""A path: parts joined by '/', placeholders (``<stack>``, ``{a,b}``, ``*``) kept in the token so it is skipped."""


def _path_candidates(text: Text) -> Iterator[str]:
    sources = code_spans(text) if text.page is not None else [text.body]
    for source in sources:
        for token in PATH.findall(source):
            # ``../x`` in code is relative to the reader's own program (``packages: ../inference-platform``).
            if not token.startswith("../"):
                yield token.rstrip(".,;:")
    if text.page is not None:
        yield from re.findall(r"\]\(([^)\s]+)\)", text.body)


def _path_problems(text: Text) -> Iterator[str]:
    base = text.page.parent if text.page is not None else REPO
    for token in _path_candidates(text):
        if re.match(r"[a-z]+://", token) or token.startswith(("#", "mailto:")):
            if token.startswith("#") and text.page is not None:
                yield from _anchor_problems(text, text.page, token[1:])
            continue
        path, _, anchor = token.partition("#")
        if not path or any(c in path for c in "<>{}*$~") or path.startswith(GENERATED) or path in UPSTREAM_PATHS:
            continue
        if (text.where, path) in REMOVED_MENTIONS:
            continue
        first = path.split("/")[0]
        # The installed namespace maps each top-level folder under inference_platform/ (setup.py).
        inside = path.split("/", 1)[1] if first == "inference_platform" and "/" in path else path
        candidates = [base / path, REPO / path, REPO / inside, REPO / "inference_platform" / inside]
        ours = first in TOP_LEVEL or (base / first).exists() or path.startswith("../")
        if not ours or not (base / path).resolve().is_relative_to(REPO):
            continue
        found = next((c for c in candidates if c.exists()), None)
        if found is None:
            yield f"{text.where}: {path} does not exist"
        elif anchor and found.suffix == ".md":
            yield from _anchor_problems(text, found, anchor)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"[`*_]", lambda m: "_" if m.group(0) == "_" else "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def _anchor_problems(text: Text, page: Path, anchor: str) -> Iterator[str]:
    headings = re.findall(r"^#+\s+(.*)$", page.read_text(encoding="utf-8"), re.M)
    if anchor not in {_slug(h) for h in headings}:
        yield f"{text.where}: {page.relative_to(REPO)} has no heading #{anchor}"


MODULE = re.compile(r"(?<![\w.])(inference_platform(?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def _module_problems(text: Text) -> Iterator[str]:
    for dotted in set(MODULE.findall(text.body)):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj: Any = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for name in parts[cut:]:
                    obj = getattr(obj, name)
            except AttributeError:
                yield f"{text.where}: {dotted} does not exist"
            break


MAKE = re.compile(r"(?<![\w-])make\s+((?:[A-Z_]+=\S*\s+)*)([a-z][a-z0-9-]*)((?:\s+[A-Z_]+=\S*)*)")


def _make_problems(text: Text) -> Iterator[str]:
    for source in code_spans(text):
        for before, target, after in MAKE.findall(source):
            if target not in TARGETS:
                yield f"{text.where}: make has no target {target}"
            for variable in re.findall(r"([A-Z_]+)=", before + after):
                if variable not in MAKE_VARIABLES:
                    yield f"{text.where}: the Makefile has no variable {variable}"


def _description_field_problems(text: Text) -> Iterator[str]:
    """``field {sub, sub (…), a | b}`` in a section's description: the field, then each sub-field, of that section."""
    section = text.where.split()[-1]
    if section not in SECTION_MODELS:
        return
    body = re.sub(r"\([^()]*\)", "", re.sub(r"\([^()]*\)", "", text.body))  # parentheticals are prose
    for field_name, inner in re.findall(r"(?<![\w.])([a-z][A-Za-z0-9]*) \{([^{}]*)\}", body):
        path = _find_field(SECTION_MODELS[section], field_name)
        if path is None:
            yield f"{text.where}: {section} has no field {field_name}"
            continue
        for item in inner.split(","):
            for name in re.findall(r"^\s*([a-z][A-Za-z0-9]*)|\|\s*([a-z][A-Za-z0-9]*)\s*$", item):
                sub = name[0] or name[1]
                if sub and not key_exists([section, *path, sub]) and not _is_value(section, path, item):
                    yield f"{text.where}: {section}.{'.'.join(path)} has no field {sub}"


def _is_value(section: str, path: list[str], item: str) -> bool:
    """``backend none | xgrammar``: values of the item's first field, not fields."""
    first = re.match(r"\s*([a-z][A-Za-z0-9]*)", item)
    return bool(first) and "|" in item and key_exists([section, *path, first.group(1)])


def _find_field(model: Any, name: str, path: tuple[str, ...] = ()) -> list[str] | None:
    """The path to a field called ``name`` anywhere under ``model`` (a description's ``x {…}`` may be nested)."""
    for option in _unwrap(model):
        origin = typing.get_origin(option)
        if origin in (dict, typing.Mapping):
            found = _find_field(typing.get_args(option)[1], name, (*path, "<name>"))
            if found is not None:
                return found
            continue
        if isinstance(option, type) and issubclass(option, RootModel):
            return _find_field(option.model_fields["root"].annotation, name, path)
        if not (isinstance(option, type) and issubclass(option, BaseModel)) or len(path) > 4:
            continue
        fields = _children(option) or {}
        if name in fields:
            return [*path, name]
        for child, annotation in fields.items():
            found = _find_field(annotation, name, (*path, child))
            if found is not None:
                return found
    return None


# --- the tests --------------------------------------------------------------------------------------------------


def test_every_name_the_docs_give_exists():
    found = sorted({problem for text in texts() for problem in problems_of(text)})
    assert not found, f"{len(found)} name(s) that do not exist:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("`inferctl plan --stack dev`", []),
        ("`inferctl plan --no-such-flag`", ["inferctl plan has no --no-such-flag"]),
        ("`inferctl prepare-engine`", ["inferctl command 'prepare-engine' does not exist"]),
        ("`inferctl capacity fleet --region-quota us-east-1=8`", []),
        ("`inferctl capacity build`", ["inferctl capacity sub-command 'build' does not exist"]),
        ("set `serving.maxInputLen` and `nodePools.<pool>.minSize`", []),
        ("set `serving.engineBuild.maxTokens`", ["settings key serving.engineBuild.maxTokens does not exist"]),
        ("see `inferctl/serving/serve_local.py` and [batch](batch.md#running-it-locally)", []),
        ("see `inference_image/templates/ensemble/config.pbtxt`", ["does not exist"]),
        ("[the lane](batch.md#no-such-heading)", ["has no heading #no-such-heading"]),
        ("`make serve-local BATCH=1`", []),
        ("`make engines`", ["make has no target engines"]),
        ("`inference_platform.components.common.default_tags_transform`", []),
        ("`inference_platform.inferctl.serving.smoke_grpc`", ["does not exist"]),
        ("`docs/source/legacy/tensorrt-backend-removal.md` upstream", []),
    ],
)
def test_the_checks_catch_what_they_should(body, expected):
    page = REPO / "docs" / "example.md"
    found = list(problems_of(Text("example", body, page=page)))
    assert len(found) == len(expected), found
    for problem, fragment in zip(found, expected, strict=True):
        assert fragment in problem, found


def test_a_description_names_fields_of_its_section():
    good = Text("Pulumi.yaml serving", "guidedDecoding {backend none | xgrammar | llguidance}, slo {ttftP50Ms}")
    assert list(problems_of(good)) == []
    stale = Text("Pulumi.yaml serving", "engineBuild {maxTokens, plugins}, slo {ttftP50Ms, tpotMs}")
    found = list(problems_of(stale))
    assert any("no field engineBuild" in p for p in found) and any("slo has no field tpotMs" in p for p in found)
