"""Reading Pulumi.yaml and stack files as the CLI hands them to the language host."""

from __future__ import annotations

import json

import pytest

from inferctl.plan.project import ConfigError, load_project, load_stack_config, secret_placeholder


def write(tmp_path, project: str, stack: str):
    (tmp_path / "app").mkdir(exist_ok=True)
    (tmp_path / "app" / "__main__.py").write_text("")
    (tmp_path / "Pulumi.yaml").write_text(project)
    (tmp_path / "Pulumi.s.yaml").write_text(stack)
    return load_project(tmp_path)


PROJECT = """
name: demo
runtime: {name: python, options: {toolchain: pip, virtualenv: .venv}}
main: app/
config:
  size: {type: integer, default: 3}
  net: {default: {cidr: 10.0.0.0/16}}
  flag: {type: boolean, default: false}
  token: {type: string, secret: true}
  aws:region: {value: eu-west-1}
"""


def test_values_are_strings_objects_are_json_and_defaults_apply(tmp_path):
    project = write(tmp_path, PROJECT, "config:\n  demo:flag: true\n  demo:net: {cidr: 10.1.0.0/16, n: [1, 2]}\n")
    config = load_stack_config(project, "s")
    assert config.values["demo:flag"] == "true"
    assert json.loads(config.values["demo:net"]) == {"cidr": "10.1.0.0/16", "n": [1, 2]}
    assert config.values["demo:size"] == "3"
    assert config.values["aws:region"] == "eu-west-1"
    assert config.secret_keys == ()


def test_secure_values_become_marked_placeholders_or_injected_plaintext(tmp_path):
    project = write(tmp_path, PROJECT, "config:\n  demo:token: {secure: v1:abc}\n  demo:net: {cidr: {secure: v1:x}}\n")
    config = load_stack_config(project, "s")
    assert config.values["demo:token"] == secret_placeholder("demo:token")
    assert set(config.secret_keys) == {"demo:token", "demo:net"}
    injected = load_stack_config(project, "s", secret_values={"token": "plain"})
    assert injected.values["demo:token"] == "plain"


def test_undeclared_project_keys_are_typos(tmp_path):
    project = write(tmp_path, PROJECT, "config:\n  demo:sise: 4\n  aws:profile: x\n")
    with pytest.raises(ConfigError, match="demo:sise"):
        load_stack_config(project, "s")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("runtime: python\n", "'name' is missing"),
        ("name: x\nruntime: nodejs\n", "Python programs only"),
        ("name: x\nruntime: python\nmain: nowhere/\n", "has no __main__.py"),
        ("- a\n", "expected a mapping"),
    ],
)
def test_bad_projects_are_refused(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        write(tmp_path, text, "config: {}\n")
