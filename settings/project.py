"""Reads a Pulumi project and one stack's config the way the Pulumi CLI hands them to the program.

What the language host receives: every value as a string (objects and arrays as JSON text), project
defaults from ``Pulumi.yaml`` for keys the stack leaves unset, and the list of secret keys with their
values decrypted. Offline there is no decryption: ``secure:`` values become marked placeholders.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from inference_platform.errors import CommandError
from inference_platform.settings.project_config import declaration_problems, stack_problems

CONFIG_ERROR = 2

YAML_BOOLEANS = ("true", "True", "TRUE", "false", "False", "FALSE")
"""The plain scalars the Pulumi CLI reads as booleans in a project or stack file. It decodes them with
gopkg.in/yaml.v3 into ``any`` (pulumi/pulumi@v3.259.0 sdk/go/common/encoding/marshal.go, go.mod
``gopkg.in/yaml.v3 v3.0.1``; workspace/loaders.go ``var projectStackRaw any``), and yaml.v3 resolves only
these (go-yaml/yaml@v3.0.1 resolve.go ``resolveMapList``); ``on``/``yes``/``y`` are YAML 1.1 booleans it
accepts only when decoding into a Go ``bool`` (decode.go), so the program receives them as strings. PyYAML
implements YAML 1.1 and would read them as booleans: the offline reader would accept what the CLI hands
the program as a string."""


# libyaml's parser where PyYAML was built with it (the lock's wheels are): a stack's files parse about 10 times
# faster than in pure Python, and the settings load in every plan and most tests. Same resolver and constructor.
try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]  # a PyYAML built without libyaml


class _PulumiYamlLoader(_SafeLoader):
    """PyYAML's safe loader with yaml.v3's booleans (:data:`YAML_BOOLEANS`): ``on``/``yes`` stay strings."""


_PulumiYamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_PulumiYamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(rf"^(?:{'|'.join(YAML_BOOLEANS)})$"), list("tTfF")
)


def secret_placeholder(key: str) -> str:
    return f"[secret placeholder for {key}]"


class ConfigError(CommandError):
    """The project or stack files cannot be read as Pulumi would read them."""

    exit_code = CONFIG_ERROR


@dataclass(frozen=True)
class Project:
    name: str
    root: Path
    main: Path
    stack_config_dir: Path
    declarations: Mapping[str, Mapping[str, Any]]

    def stack_file(self, stack: str) -> Path:
        return self.stack_config_dir / f"Pulumi.{stack}.yaml"

    def qualify(self, key: str) -> str:
        return key if ":" in key else f"{self.name}:{key}"


@dataclass(frozen=True)
class StackConfig:
    stack: str
    file: Path
    values: dict[str, str]
    """Fully qualified key -> the string the language host receives."""
    secret_keys: tuple[str, ...] = ()
    secret_values: dict[str, str] = field(default_factory=dict)
    """Fully qualified secret key -> the plaintext the program saw (placeholders unless injected)."""


def load_project(program_dir: Path) -> Project:
    root = program_dir.resolve()
    path = next((root / n for n in ("Pulumi.yaml", "Pulumi.yml") if (root / n).is_file()), None)
    if path is None:
        raise ConfigError(f"no Pulumi.yaml in {root}")
    doc = _read_yaml(path)
    name = doc.get("name")
    runtime = doc.get("runtime")
    runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}: 'name' is missing")
    if runtime_name != "python":
        raise ConfigError(f"{path}: runtime is {runtime_name!r}; the offline plan runs Python programs only")
    main = (root / doc.get("main", ".")).resolve()
    if main.is_file():
        main = main.parent if main.name == "__main__.py" else main
    if not (main / "__main__.py").is_file() and not main.is_file():
        raise ConfigError(f"{path}: main {doc.get('main', '.')!r} has no __main__.py")
    raw_config = doc.get("config") or {}
    if not isinstance(raw_config, dict):
        raise ConfigError(f"{path}: 'config' must map keys to declarations")
    declarations = {str(key): _declaration(name, str(key), decl) for key, decl in raw_config.items()}
    problems = declaration_problems(name, declarations)
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))
    return Project(
        name=name,
        root=root,
        main=main,
        stack_config_dir=(root / doc.get("stackConfigDir", ".")).resolve(),
        declarations=declarations,
    )


def load_stack_config(
    project: Project,
    stack: str,
    stack_file: Path | None = None,
    secret_values: Mapping[str, str] | None = None,
) -> StackConfig:
    path = (stack_file or project.stack_file(stack)).resolve()
    if not path.is_file():
        raise ConfigError(f"stack file {path} not found (expected Pulumi.{stack}.yaml in {project.stack_config_dir})")
    doc = _read_yaml(path, allow_empty=True)
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: 'config' must be a mapping")
    _check_declared(project, config, path)
    injected = {project.qualify(k): v for k, v in (secret_values or {}).items()}
    # What the CLI refuses before the program starts: required keys left unset, values not of their type.
    qualified_config = {project.qualify(str(k)): v for k, v in config.items()}
    problems = stack_problems(
        project.name, stack, project.declarations, qualified_config, injected, esc_environment="environment" in doc
    )
    if problems:
        raise ConfigError(f"{path}: " + "; ".join(problems))

    values: dict[str, str] = {}
    secrets: dict[str, str] = {}
    for key, value in config.items():
        qualified = project.qualify(str(key))
        decoded, is_secret = _decode(qualified, value, injected)
        values[qualified] = decoded
        if is_secret:
            secrets[qualified] = decoded
    for key, decl in project.declarations.items():
        qualified = project.qualify(key)
        if qualified in values:
            continue
        # Project keys take `default`; other namespaces (e.g. aws:region) take `value`.
        for attr in ("default", "value"):
            if attr in decl:
                values[qualified] = _as_config_string(decl[attr])
    return StackConfig(stack=stack, file=path, values=values, secret_keys=tuple(sorted(secrets)), secret_values=secrets)


def _declaration(project: str, key: str, decl: Any) -> dict[str, Any]:
    """A declaration, with the CLI's shorthand expanded: ``key: <scalar or list>`` is a default for a key
    of the project's namespace and a ``value`` for any other (``aws:region: us-west-2``); a mapping is a
    declaration."""
    if isinstance(decl, dict):
        return decl
    return {"default" if ":" not in key or key.startswith(f"{project}:") else "value": decl}


def _check_declared(project: Project, config: Mapping[str, Any], path: Path) -> None:
    """A stack key in the project's namespace that Pulumi.yaml does not declare is a typo."""
    if not project.declarations:
        return
    declared = {project.qualify(k) for k in project.declarations}
    unknown = sorted(
        str(k)
        for k in config
        if project.qualify(str(k)).startswith(f"{project.name}:") and project.qualify(str(k)) not in declared
    )
    if unknown:
        allowed = ", ".join(sorted(declared))
        raise ConfigError(f"{path}: unknown config key(s) {', '.join(unknown)}; Pulumi.yaml declares {allowed}")


def _decode(key: str, value: Any, injected: Mapping[str, str]) -> tuple[str, bool]:
    if isinstance(value, dict) and set(value) == {"secure"}:
        return injected.get(key, secret_placeholder(key)), True
    found: list[bool] = []

    def walk(v: Any) -> Any:
        if isinstance(v, dict) and set(v) == {"secure"}:
            found.append(True)
            return secret_placeholder(key)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    plain = walk(value)
    # A nested secure value makes the whole key secret, as `pulumi config set --secret --path` does.
    return _as_config_string(plain), bool(found)


def _as_config_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _read_yaml(path: Path, *, allow_empty: bool = False) -> dict[str, Any]:
    """``allow_empty``: an empty stack file is a stack with no config (``pulumi stack init`` writes none)."""
    try:
        doc = yaml.load(path.read_text(), Loader=_PulumiYamlLoader)
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"cannot read {path}: {err}") from None
    if doc is None and allow_empty:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return doc
