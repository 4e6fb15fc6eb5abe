"""The Pulumi CLI's project-config rules, applied before the program runs as the CLI applies them.

The CLI checks ``Pulumi.yaml``'s ``config`` block and the stack's values before it starts the language
host (pulumi/pulumi ``sdk/go/common/workspace``: ``Project.Validate``, ``mergeConfig``,
``validateStackConfigValue``, ``ValidateConfigValue``). A stack the CLI would refuse must fail the offline
plan too, with every problem at once:

- a declaration has both ``default`` and ``value``; an ``array`` has no ``items``; a typed ``default``
  is not of its type; a key of another namespace (``aws:region``) has a ``type`` or ``default`` or no
  ``value``;
- a key of the project's namespace with neither ``default`` nor ``value`` is required: a stack that does
  not set it is "missing configuration values";
- a typed key's value (the stack's, or the default the CLI merged in) must be of the declared type
  (``string``: any scalar; ``integer``: a whole number or a string that parses as one; ``boolean``:
  ``true``/``false``; ``array``: a list whose items match ``items``), and a ``secret: true`` typed key's
  value must be encrypted (``secure:``): a plain default of such a key is refused too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TYPES = ("string", "integer", "boolean", "array")
# The fields of a declaration (the CLI's project schema allows no others).
FIELDS = ("type", "items", "description", "secret", "default", "value")


def is_secure(value: Any) -> bool:
    """A stack value written by ``pulumi config set --secret`` (``{secure: <ciphertext>}``)."""
    return isinstance(value, dict) and set(value) == {"secure"}


def declaration_problems(project: str, declarations: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """What ``Project.Validate`` refuses in the ``config`` block of ``Pulumi.yaml``."""
    out = []
    for key, decl in sorted(declarations.items()):
        where = f"Pulumi.yaml config.{key}"
        typed = "type" in decl
        unknown = sorted(str(f) for f in decl if f not in FIELDS)
        if unknown:
            out.append(f"{where}: unknown field(s) {', '.join(unknown)}; a declaration takes {', '.join(FIELDS)}")
        if "default" in decl and "value" in decl:
            out.append(f"{where}: has both 'default' and 'value'; keep one")
        if typed and decl["type"] not in TYPES:
            out.append(f"{where}: type {decl['type']!r} is not one of {', '.join(TYPES)} (objects take no type)")
            continue
        if not _in_project(project, key):
            if typed:
                out.append(f"{where}: is not in the project's namespace and must not declare a type")
            if "default" in decl:
                out.append(f"{where}: is not in the project's namespace: use 'value', not 'default'")
            elif "value" not in decl:
                out.append(f"{where}: is not in the project's namespace and must give a 'value'")
            continue
        if typed and decl["type"] == "array" and "items" not in decl:
            out.append(f"{where}: declares an array but not the type of its 'items'")
        elif typed and decl.get("default") is not None and not value_matches(decl, decl["default"]):
            out.append(f"{where}: default {decl['default']!r} is not of type {type_name(decl)}")
    return out


def stack_problems(
    project: str,
    stack: str,
    declarations: Mapping[str, Mapping[str, Any]],
    config: Mapping[str, Any],
    decrypted: Mapping[str, str],
    *,
    esc_environment: bool = False,
) -> list[str]:
    """What ``mergeConfig`` refuses: required keys the stack leaves unset, values not of their type.

    ``config`` maps fully qualified keys to the stack file's values (``{secure: ...}`` kept as written);
    ``decrypted`` holds plaintexts for secure values where they are known (offline, usually none).
    ``esc_environment``: the stack file imports a Pulumi ESC environment, whose values the CLI merges in
    first and which cannot be read offline, so a key the file leaves unset is not reported missing.
    """
    missing, out = [], []
    for key, decl in sorted(declarations.items()):
        qualified = key if ":" in key else f"{project}:{key}"
        has_default = decl.get("default") is not None
        has_value = decl.get("value") is not None
        if qualified not in config:
            if not has_default and not has_value and _in_project(project, key):
                if not esc_environment:
                    missing.append(key)
                continue
            if not has_default and not has_value:
                continue
            # The CLI merges the default into the stack's config, then validates it like a stack value.
            value: Any = decl["default"] if has_default else decl["value"]
        else:
            value = config[qualified]
        if "type" not in decl or decl["type"] not in TYPES:
            continue
        if decl.get("secret") and not is_secure(value):
            source = "its default in Pulumi.yaml" if qualified not in config else "the stack's value"
            out.append(
                f"Stack '{stack}' with configuration key '{key}' must be encrypted as it's secret ({source} is "
                f"plain text): set it with `pulumi config set --secret {key} <value>`"
            )
            continue
        if is_secure(value):
            if qualified not in decrypted:
                continue  # The ciphertext cannot be read offline; the program's own checks still run.
            value = decrypted[qualified]
        if not value_matches(decl, _as_stack_value(value)):
            out.append(f"Stack '{stack}' with configuration key '{key}' must be of type '{type_name(decl)}'")
    if missing:
        keys = ", ".join(f"'{k}'" for k in missing)
        sets = "; ".join(
            f"`pulumi config set {'--secret ' if declarations[k].get('secret') else ''}{k} <value>`" for k in missing
        )
        out.insert(
            0,
            f"Stack '{stack}' is missing configuration value{'s' if len(missing) > 1 else ''} {keys}: "
            f"Pulumi.yaml declares {'them' if len(missing) > 1 else 'it'} without a default; set {sets}",
        )
    return out


def value_matches(decl: Mapping[str, Any], value: Any) -> bool:
    """``ValidateConfigValue``: does ``value`` (as the CLI holds it) fit the declared type?"""
    kind = decl.get("type")
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return True
        if isinstance(value, float):
            return value.is_integer()
        if isinstance(value, str):
            try:
                int(value, 10)
            except ValueError:
                return False
            return True
        return False
    if kind == "boolean":
        return isinstance(value, bool) or value in ("true", "false")
    items = decl.get("items")
    if not isinstance(value, list) or not isinstance(items, Mapping):
        return False
    return all(value_matches(items, item) for item in value)


def type_name(decl: Mapping[str, Any]) -> str:
    """``InferFullTypeName``: ``array<array<string>>`` for nested items."""
    items = decl.get("items")
    return f"array<{type_name(items)}>" if isinstance(items, Mapping) else str(decl.get("type"))


def _as_stack_value(value: Any) -> Any:
    """The CLI keeps a stack's scalars as text (``5`` is ``"5"``, ``true`` is ``"true"``); lists and maps
    stay structured (they travel as JSON objects)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    return value


def _in_project(project: str, key: str) -> bool:
    return ":" not in key or key.startswith(f"{project}:")
