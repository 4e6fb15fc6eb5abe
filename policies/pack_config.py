"""The pack's configuration file (``policies/config/<stack>.json``, ``pulumi preview --policy-pack-config``),
validated like the stack settings: every bad entry is one problem naming it.

The file is an object whose keys are ``all`` or a policy name of the pack; each value is an enforcement
level, or an object with an optional ``enforcementLevel`` and the policy's own properties
(its ``config_schema``). A misspelt policy or property name, an unknown level, a value of the wrong type
and a number that is not finite (JSON's ``NaN``/``Infinity``, which Python's json reads) or negative
(every number this pack takes is a count, a budget or a duration; a property whose schema sets its own
``minimum`` uses that) are each refused: before, they turned a rule off or ended in a traceback.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from typing import Any, cast

import jsonschema
from pulumi_policy import EnforcementLevel, Policy

ALL = "all"
DELEGATED = frozenset({"assumptions"})
"""Properties checked by their own validator, which names each inner key (the cost policies' usage
assumptions: inference_platform.planners.costing.Usage.from_config, run by
inference_platform.offline_plan.policy_config.assumption_problems)."""
LEVELS = tuple(level.value for level in EnforcementLevel)
LEVEL_KEY = "enforcementLevel"


def problems(config: Any, policies: Iterable[Policy]) -> list[str]:
    """``<entry>: <what is wrong>`` for every bad entry of ``config``; [] when it is valid."""
    if not isinstance(config, Mapping):
        return [f"(top level): got {_kind(config)}; expected an object of policy names ({ALL!r} or a policy)"]
    by_name = {p.name: p for p in policies}
    out: list[str] = []
    for name, entry in config.items():
        if name != ALL and name not in by_name:
            hint = difflib.get_close_matches(str(name), [ALL, *by_name], n=1)
            did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            out.append(f"{name}: not a policy of this pack{did_you_mean}")
            continue
        out += _entry_problems(str(name), entry, by_name.get(name))
    return out


def _entry_problems(name: str, entry: Any, policy: Policy | None) -> list[str]:
    if isinstance(entry, str):
        return _level_problems(name, entry)
    if not isinstance(entry, Mapping):
        return [f"{name}: got {_kind(entry)}; expected an enforcement level ({', '.join(LEVELS)}) or an object"]
    out = []
    if LEVEL_KEY in entry:
        out += _level_problems(f"{name}.{LEVEL_KEY}", entry[LEVEL_KEY])
    schema = (policy.config_schema.properties if policy is not None and policy.config_schema else None) or {}
    for key, value in entry.items():
        if key == LEVEL_KEY:
            continue
        if key in DELEGATED and key in schema:
            continue
        if key not in schema:
            allowed = [LEVEL_KEY, *sorted(schema)]
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            did_you_mean = f" (did you mean {hint[0]!r}?)" if hint else ""
            out.append(f"{name}.{key}: unknown key{did_you_mean}; allowed keys: {', '.join(allowed)}")
            continue
        out += _value_problems(f"{name}.{key}", value, schema[key])
    return out


def _level_problems(where: str, level: Any) -> list[str]:
    if isinstance(level, str) and level in LEVELS:
        return []
    return [f"{where}: got {level!r}; expected an enforcement level: {', '.join(LEVELS)}"]


def _value_problems(where: str, value: Any, schema: Mapping[str, Any]) -> list[str]:
    for path, number in _numbers(value):
        if not math.isfinite(number):
            return [f"{where}{path}: got {number!r}; expected a finite number"]
    if schema.get("type") in ("number", "integer") and "minimum" not in schema:
        schema = {**schema, "minimum": 0}
    validator = jsonschema.Draft7Validator(dict(schema))
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    out = []
    for error in errors[:1]:  # one problem per entry: the first is the cause, the rest follow from it
        inside = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        out.append(f"{where}{inside}: got {_short(error.instance)}; {_reason(error)}")
    return out


def _reason(error: jsonschema.ValidationError) -> str:
    if error.validator == "type":
        return f"expected {'an' if str(error.validator_value)[0] in 'aeiou' else 'a'} {error.validator_value}"
    if error.validator == "minimum":
        return f"expected at least {error.validator_value}"
    if error.validator == "maximum":
        return f"expected at most {error.validator_value}"
    if error.validator == "enum":
        return f"expected one of {', '.join(map(str, cast(list[Any], error.validator_value)))}"  # enum: its choices
    return error.message


def _numbers(value: Any, path: str = "") -> Iterable[tuple[str, float]]:
    if isinstance(value, float):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _numbers(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _numbers(v, f"{path}[{i}]")


def _kind(value: Any) -> str:
    kinds = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return f"{kinds.get(type(value), type(value).__name__)} {_short(value)}"


def _short(value: Any) -> str:
    from inference_platform.redaction import scrub_value

    text = repr(scrub_value(value))  # before it is cut short, or a cut credential is no longer recognised
    return text if len(text) <= 60 else text[:57] + "..."
