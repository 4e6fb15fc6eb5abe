"""Reading Pulumi.yaml and stack files as the CLI hands them to the language host."""

from __future__ import annotations

import json

import pytest

from inference_platform.settings.project import ConfigError, load_project, load_stack_config, secret_placeholder


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
    stack = "config:\n  demo:flag: true\n  demo:net: {cidr: 10.1.0.0/16, n: [1, 2]}\n  demo:token: {secure: v1:a}\n"
    project = write(tmp_path, PROJECT, stack)
    config = load_stack_config(project, "s")
    assert config.values["demo:flag"] == "true"
    assert json.loads(config.values["demo:net"]) == {"cidr": "10.1.0.0/16", "n": [1, 2]}
    assert config.values["demo:size"] == "3"
    assert config.values["aws:region"] == "eu-west-1"
    assert config.secret_keys == ("demo:token",)


def test_secure_values_become_marked_placeholders_or_injected_plaintext(tmp_path):
    project = write(tmp_path, PROJECT, "config:\n  demo:token: {secure: v1:abc}\n  demo:net: {cidr: {secure: v1:x}}\n")
    config = load_stack_config(project, "s")
    assert config.values["demo:token"] == secret_placeholder("demo:token")
    assert set(config.secret_keys) == {"demo:token", "demo:net"}
    injected = load_stack_config(project, "s", secret_values={"token": "plain"})
    assert injected.values["demo:token"] == "plain"


def test_undeclared_project_keys_are_typos(tmp_path):
    project = write(tmp_path, PROJECT, "config:\n  demo:sise: 4\n  aws:profile: x\n  demo:token: {secure: v1:a}\n")
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


# The Pulumi CLI's project-config rules (settings/project_config.py), checked before the program.

REQUIRED = "tests/fixtures/required_config_program"


def plan_exit(repo, tmp_path, program, stack) -> int:
    from inference_platform.inferctl.cli import main

    return main(["plan", "--program", str(repo / program), "--stack", stack, "--out", str(tmp_path), "--quiet"])


def test_a_stack_without_a_required_key_exits_2_naming_it(repo, tmp_path, capsys):
    assert plan_exit(repo, tmp_path, REQUIRED, "unset") == 2
    err = capsys.readouterr().err
    assert "Stack 'unset' is missing configuration value 'dbPassword'" in err
    assert "pulumi config set --secret dbPassword" in err and "Traceback" not in err


def test_values_not_of_their_declared_type_exit_2_naming_each_key(repo, tmp_path, capsys):
    assert plan_exit(repo, tmp_path, REQUIRED, "mistyped") == 2
    err = capsys.readouterr().err
    assert "'dbPassword' must be encrypted as it's secret" in err and "hunter2" not in err
    assert "'replicas' must be of type 'integer'" in err
    assert "'zones' must be of type 'array<string>'" in err


def test_a_stack_that_sets_the_required_key_plans(repo, tmp_path):
    assert plan_exit(repo, tmp_path, REQUIRED, "test") == 0


def test_every_missing_key_is_named_at_once(tmp_path):
    project = write(tmp_path, PROJECT.replace("flag: {type: boolean, default: false}", "flag: {type: boolean}"), "")
    with pytest.raises(ConfigError) as err:
        load_stack_config(project, "s")
    assert "missing configuration values 'flag', 'token'" in str(err.value)


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_the_shipped_stacks_pass_the_cli_rules(repo, stack):
    """Pulumi.yaml once declared ngcApiKey and hfToken without a default: the CLI refused every stack."""
    config = load_stack_config(load_project(repo), stack)
    assert config.values["inference-platform:ngcApiKey"] == ""


@pytest.mark.parametrize(
    ("decl", "value", "ok"),
    [
        ({"type": "integer"}, "12", True),
        ({"type": "integer"}, 12, True),
        ({"type": "integer"}, "1.5", False),
        ({"type": "integer"}, True, False),
        ({"type": "boolean"}, "true", True),
        ({"type": "boolean"}, "yes", False),
        ({"type": "string"}, "x", True),
        ({"type": "string"}, ["x"], False),
        ({"type": "array", "items": {"type": "string"}}, ["a", "b"], True),
        ({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}, [[1], ["x"]], False),
    ],
)
def test_values_match_types_as_the_cli_decides(decl, value, ok):
    from inference_platform.settings.project_config import value_matches

    assert value_matches(decl, value) is ok


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("  a: {default: 1, value: 2}\n", "both 'default' and 'value'"),
        ("  a: {type: array}\n", "declares an array but not the type of its 'items'"),
        ("  a: {type: integer, default: many}\n", "is not of type integer"),
        ("  a: {type: object}\n", "type 'object' is not one of"),
        ("  a: {typ: string}\n", "unknown field(s) typ"),
        ("  aws:region: {type: string, value: x}\n", "must not declare a type"),
        ("  aws:region: {default: us-west-2}\n", "use 'value', not 'default'"),
        ("  a: {type: string, secret: true, default: ''}\n", None),
    ],
)
def test_declarations_the_cli_refuses(tmp_path, config, message):
    text = f"name: demo\nruntime: python\nmain: app/\nconfig:\n{config}"
    if message is None:
        # Accepted in Pulumi.yaml, but the CLI checks `secret` against the merged plain default.
        project = write(tmp_path, text, "config: {}\n")
        with pytest.raises(ConfigError, match="'a' must be encrypted as it's secret"):
            load_stack_config(project, "s")
        return
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        write(tmp_path, text, "config: {}\n")


def test_a_stack_importing_an_esc_environment_may_take_required_keys_from_it(tmp_path):
    """The CLI merges a Pulumi ESC environment's values first; offline they cannot be read."""
    project = write(tmp_path, PROJECT, "environment:\n  - team/secrets\nconfig: {}\n")
    assert "demo:token" not in load_stack_config(project, "s").values
