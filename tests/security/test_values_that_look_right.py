"""Issue 28 (bad input): strings that look like booleans, and shell metacharacters in values that reach a
command line, are refused naming the key (exit 2), for every key of the class.

- Every boolean key (walked from the models, tests/security/setting_paths.py) refuses ``"on"``, ``"yes"``,
  ``"true"``, ``"1"``...: pydantic's lax mode would take them as true. The stack-file reader reads YAML as
  the Pulumi CLI does (settings/project.py YAML_BOOLEANS), so an unquoted ``on`` is the string the program
  receives, and is refused offline as it would be under ``pulumi up``.
- Every key whose value reaches a container's command or arguments refuses shell metacharacters: the keys
  are found by scanning the shipped stacks' rendered commands for their values, so a key that starts
  reaching a command tomorrow is swept too; keys the shipped stacks leave unset are listed."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from inference_platform.inferctl.cli import main
from inference_platform.settings import SettingsError, load_settings
from inference_platform.settings.project import _PulumiYamlLoader
from tests.security.setting_paths import boolean_paths, dotted, put, string_paths
from tests.settings.test_contradictions import PROJECT, stack_values

BOOLEANS = boolean_paths()
LOOKALIKES = ["on", "yes", "y", "true", "True", "1", "off", "no", "false", "t"]


def _problems(stack: str, values: dict) -> dict[str, str]:
    _, region = stack_values(stack)
    try:
        load_settings(values, project=PROJECT, stack=stack, region=region)
    except SettingsError as err:
        return {p.path: p.message for p in err.problems}
    return {}


def test_the_walk_finds_the_boolean_keys():
    found = {dotted(*p) for p in BOOLEANS}
    assert {"storage.forceDestroy", "edge.rateLimits.failClosed", "nodePools.k.efa", "serving.auth.enabled"} <= found
    assert len(BOOLEANS) > 30


@pytest.mark.parametrize(("section", "path"), BOOLEANS, ids=[dotted(*p) for p in BOOLEANS])
def test_every_boolean_key_refuses_a_string_that_looks_like_one(section, path):
    base, _ = stack_values("dev")
    for text in LOOKALIKES:
        found = _problems("dev", put(copy.deepcopy(base), section, path, text))
        key = dotted(section, path).replace(".k.", ".")
        named = [p for p in found if p.startswith(dotted(section, path[:1]) if path else section)]
        assert named, f"{key} = {text!r} accepted"
        assert any("true or false" in found[p] for p in named), (key, found)
    # ...and a real boolean is a boolean.
    found = _problems("dev", put(copy.deepcopy(base), section, path, True))
    assert not [m for m in found.values() if "true or false" in m], found


def test_yaml_reads_booleans_as_the_pulumi_cli_does():
    doc = yaml.load("a: on\nb: yes\nc: true\nd: FALSE\ne: [off, True]\nf: 'on'\n", Loader=_PulumiYamlLoader)
    assert doc == {"a": "on", "b": "yes", "c": True, "d": False, "e": ["off", True], "f": "on"}


def test_an_unquoted_on_in_a_stack_file_exits_2_naming_the_key(tmp_path, capsys):
    text = (Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.dev.yaml").read_text()
    text = text.replace("    forceDestroy: true", "    forceDestroy: on")
    assert "forceDestroy: on" in text
    (tmp_path / "Pulumi.dev.yaml").write_text(text)
    code = main(["plan", "--stack", "dev", "--stack-file", str(tmp_path / "Pulumi.dev.yaml"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "storage.forceDestroy" in err and "true or false" in err, err


METACHARACTERS = [";", "$", "`", "|", "&", ">", "<", "(", "'", '"', "\\", " ", "\n", "*", "?", "{", "!", "#"]
# Keys that reach a command line which the shipped stacks leave unset (so the scan below cannot see them),
# each with a valid value; the scan covers the ones the stacks set.
UNSET_COMMAND_KEYS = {
    "serving.artifacts.engineUri": "s3://bucket-name/models/llama/fp8/",
    "serving.artifacts.tokenizerUri": "s3://bucket-name/models/llama/tokenizer/",
    "serving.auth.keyFile": "/mnt/secrets/inference/api-key",
    "serving.auth.keyEnv": "TRITON_API_KEY",
    "serving.checkpoint": "nvidia/Llama-3.1-8B-Instruct-FP8",
    "fsx.fileSystemPath": "/models",
    "verification.client": "verifier",
    "loadTest.client": "loadtest",
    "verification.url": "https://api.example.com",
    "loadTest.url": "https://api.example.com",
    "verification.prometheusUrl": "http://prometheus.monitoring.svc:9090",
    "inference.model.engine": "llama/fp8-tp1/2026-11-30/",
    "inference.model.tokenizer": "llama/tokenizer/2026-11-30/",
    "storage.modelPrefix": "models/",
}


def _mutated(stack: str, key: str, value: str) -> dict:
    base, _ = stack_values(stack)
    section, *rest = key.split(".")
    return put(copy.deepcopy(base), section, tuple(rest), value)


@pytest.mark.parametrize("key", sorted(UNSET_COMMAND_KEYS))
def test_every_key_that_reaches_a_command_refuses_shell_metacharacters(key):
    good = UNSET_COMMAND_KEYS[key]
    for char in METACHARACTERS:
        bad = good.rstrip("/") + char + "x" + ("/" if good.endswith("/") else "")
        found = _problems("prod", _mutated("prod", key, bad))
        assert key in found, f"{key} = {bad!r} accepted: {found}"


def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    else:
        yield path, obj


def _command_words(plan) -> set[str]:
    """Every word of every container command and argument the plan renders, and each '/'-separated part."""
    words: set[str] = set()
    for r in plan.run.resources:
        for path, value in _leaves(r.inputs):
            if isinstance(value, str) and any(p in ("command", "args") for p in path if isinstance(p, str)):
                for word in value.replace("=", " ").split():
                    words.add(word)
                    words.update(part for part in word.split("/") if part)
    return words


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_the_keys_the_stacks_render_into_commands_refuse_shell_metacharacters(stack, stack_plan):
    words = _command_words(stack_plan(stack))
    base, _ = stack_values(stack)
    reaching = []
    for section, path in string_paths():
        node = base.get(section)
        for step in path:
            try:
                node = node[step] if step not in ("k", "<key>") else None  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                node = None
            if node is None:
                break
        if isinstance(node, str) and len(node) >= 6 and any(node.strip("/") in word for word in words):
            reaching.append(dotted(section, path))
    assert "inference.model.engine" in reaching, reaching
    for key in reaching:
        found = _problems(stack, _mutated(stack, key, "x;id"))
        assert key in found, f"{key} reaches a command in {stack} and takes 'x;id': {found}"
