"""Building blocks of the typed stack settings: the section base model and the problem report.

Every section is a pydantic model that forbids unknown keys and uses the camelCase names written in
the stack file. Semantic checks that need more than one field (or another section) are methods
returning :class:`Problem` lists, so one pass reports every problem instead of the first one.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from inference_platform.redaction import scrub, scrub_value

if TYPE_CHECKING:
    from inference_platform.catalog.regions import Region


@dataclass(frozen=True)
class Problem:
    """One bad config value: where it is (as written in the stack file), what it was, what is allowed."""

    path: str
    message: str

    def __post_init__(self) -> None:
        # Every problem quotes what it refuses, and every problem is printed (the CLI, `pulumi up`, CI logs):
        # a credential in a value never is (inference_platform.redaction; the key path too, a mapping key
        # being a value the user wrote).
        object.__setattr__(self, "path", scrub(self.path))
        object.__setattr__(self, "message", scrub(self.message))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SettingsError(Exception):
    """Invalid stack configuration; the message lists every problem, one per line."""

    def __init__(self, problems: Iterable[Problem], *, header: str = "invalid stack configuration") -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        count = len(self.problems)
        lines = [f"{header} ({count} problem{'s' if count != 1 else ''}):"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class CheckContext:
    """What semantic checks may look at besides their own section."""

    stack: str
    environment: str
    region: Region | None
    sections: Mapping[str, SectionModel] = field(default_factory=dict)
    failed: frozenset[str] = frozenset()
    """Sections that already failed (their own values are wrong): a check reading one sees it absent and
    must not report what follows from that absence (``inference-platform:<key>`` keys)."""

    @property
    def production(self) -> bool:
        return self.environment == "production"

    def known(self, key: str) -> bool:
        """Whether section ``key`` is usable: present, or absent only because it was never configured."""
        return key not in self.failed


class SectionModel(Protocol):
    """What one top-level key is read into: a :class:`Section`, or the node pools (a mapping, so a pydantic
    ``RootModel`` and not a Section). What the loader and the checks use of each."""

    key: ClassVar[str]

    def problems(self, ctx: CheckContext) -> list[Problem]: ...


class ReadRecorder(Mapping[str, SectionModel]):
    """``sections`` for one check: records which other sections it read (load_settings uses it to tell
    a section's own problems from those that follow from another section's bad value)."""

    def __init__(self, sections: Mapping[str, SectionModel]) -> None:
        self._sections = sections
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> SectionModel:
        self.read.add(key)
        return self._sections[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self._sections.get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return key in self._sections

    def __iter__(self) -> Any:
        self.read.update(self._sections)
        return iter(self._sections)

    def __len__(self) -> int:
        return len(self._sections)


class Section(BaseModel):
    """A namespaced config object such as ``inference-platform:network``."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
        # ``.inf``/``.nan`` (YAML) or "inf"/"nan" are floats to pydantic: ``gt=0`` lets inf through and nan
        # compares false with every bound. No setting means an unbounded or undefined number.
        allow_inf_nan=False,
    )

    # The top-level config key this section is read from (without the project namespace).
    key: ClassVar[str]
    # camelCase keys this section no longer has -> what replaces them (the "unknown key" error says so).
    retired_keys: ClassVar[Mapping[str, str]] = {}

    def problems(self, ctx: CheckContext) -> list[Problem]:
        """Semantic problems of this section; the default has none."""
        return []

    @field_validator("*", mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """``true`` is not 1: pydantic's lax mode turns a boolean into 1/0 for an int, a float or a numeric
        Literal. Every section (nested ones too) inherits this, so every number refuses booleans.
        (Model-level ``strict`` would also refuse the strings enums and Literals are written as.)"""
        field = cls.model_fields.get(info.field_name or "")
        where = _boolean_in_number(field.annotation, value) if field is not None else None
        if where is not None:
            inside = f" (at {where})" if where else ""
            raise ValueError(f"expected a number, not the boolean {str(_at(value, where)).lower()}{inside}")
        where = _string_in_boolean(field.annotation, value) if field is not None else None
        if where is not None:
            # pydantic's lax mode reads "on", "yes", "y", "1", "t", "true" as true. Pulumi's YAML (yaml.v3, YAML
            # 1.2) reads an unquoted `on` as that string, and `pulumi config set --path k on` stores it so
            # (settings/project.py YAML_BOOLEANS): a boolean is written true or false, unquoted.
            inside = f" (at {where})" if where else ""
            raise ValueError(f"expected true or false, unquoted, not a string{inside}")
        if field is not None and isinstance(value, int | float) and not isinstance(value, bool):
            leaves = _leaves(field.annotation)
            if bool in leaves and not any(t in (int, float, str, Any) for t in leaves):
                # ...nor is 1 true: lax mode would read 0/1 as a boolean.
                raise ValueError("expected true or false, not a number")
        return value

    @field_validator("*", mode="after")
    @classmethod
    def _bounded_integers(cls, value: Any, info: ValidationInfo) -> Any:
        """An integer key without its own upper bound stops at :data:`INT_MAX` (what its consumer takes)."""
        field = cls.model_fields.get(info.field_name or "")
        if field is None or _has_upper_bound(field.metadata) or isinstance(value, BaseModel):
            return value
        found = _int_beyond(value)
        if found is not None:
            inside = f" (at {found[0]})" if found[0] else ""
            raise ValueError(
                f"expected an integer from -{INT_MAX} to {INT_MAX}{inside}: the Kubernetes and AWS fields it goes "
                f"to are 32-bit"
            )
        return value


INT_MAX = 2**31 - 1
"""The ceiling of an integer setting that names no bound of its own: Kubernetes' int32 fields (replica
counts, seconds, ports) and AWS's Integer shapes are the narrowest consumers a number goes to. A key with
a wider consumer (Envoy Gateway's uint32 limits) says so with its own ``le``."""


def _has_upper_bound(metadata: Iterable[Any]) -> bool:
    return any(hasattr(m, "le") or hasattr(m, "lt") for m in metadata)


def _int_beyond(value: Any, where: str = "") -> tuple[str, int] | None:
    """The first int in ``value`` (itself, or inside a list or mapping) above :data:`INT_MAX`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (where, value) if abs(value) > INT_MAX else None
    items = enumerate(value) if isinstance(value, list | tuple) else value.items() if isinstance(value, dict) else ()
    for k, v in items:
        found = _int_beyond(v, f"{where}[{k}]" if isinstance(k, int) else f"{where}.{k}")
        if found is not None:
            return found
    return None


def _boolean_in_number(annotation: Any, value: Any, where: str = "") -> str | None:
    """The place (``""`` for the value itself, ``"[2]"``/``".key"`` inside it) where ``value`` holds a boolean
    that ``annotation`` would read as a number; None when there is none."""
    if isinstance(value, bool):
        leaves = _leaves(annotation)
        accepts_bool = bool in leaves or Any in leaves or any(v is value for v in _literal_values(annotation))
        numeric = any(t in (int, float) for t in leaves) or any(
            isinstance(v, int | float) and not isinstance(v, bool) for v in _literal_values(annotation)
        )
        return where if numeric and not accepts_bool else None
    if isinstance(value, list | tuple):
        item = _container_item(annotation, (list, tuple, set, frozenset, typing.Sequence))
        if item is not None:
            for i, v in enumerate(value):
                found = _boolean_in_number(item, v, f"{where}[{i}]")
                if found is not None:
                    return found
    if isinstance(value, dict):
        item = _container_item(annotation, (dict, typing.Mapping))
        if item is not None:
            for k, v in value.items():
                found = _boolean_in_number(item, v, f"{where}.{k}")
                if found is not None:
                    return found
    return None


def _string_in_boolean(annotation: Any, value: Any, where: str = "") -> str | None:
    """The place where ``value`` holds a string that ``annotation`` would read as a boolean (a ``bool`` with
    no string type beside it); None when there is none."""
    if isinstance(value, str):
        leaves = _leaves(annotation)
        takes_text = any(t in (str, Any) for t in leaves) or any(
            isinstance(v, str) for v in _literal_values(annotation)
        )
        return where if bool in leaves and not takes_text else None
    if isinstance(value, list | tuple):
        item = _container_item(annotation, (list, tuple, set, frozenset, typing.Sequence))
        if item is not None:
            for i, v in enumerate(value):
                found = _string_in_boolean(item, v, f"{where}[{i}]")
                if found is not None:
                    return found
    if isinstance(value, dict):
        item = _container_item(annotation, (dict, typing.Mapping))
        if item is not None:
            for k, v in value.items():
                found = _string_in_boolean(item, v, f"{where}.{k}")
                if found is not None:
                    return found
    return None


def _at(value: Any, where: str) -> Any:
    """The element of ``value`` at ``where`` (as :func:`_boolean_in_number` names it)."""
    for part in re.findall(r"\[(\d+)\]|\.([^.\[]+)", where):
        value = value[int(part[0])] if part[0] else value[part[1]]
    return value


def _members(annotation: Any) -> list[Any]:
    """``annotation`` split into its union members, with ``Annotated`` metadata dropped."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _leaves(annotation: Any) -> list[Any]:
    return [m for m in _members(annotation) if typing.get_origin(m) is None]


def _literal_values(annotation: Any) -> list[Any]:
    return [v for m in _members(annotation) if typing.get_origin(m) is Literal for v in typing.get_args(m)]


def _container_item(annotation: Any, origins: tuple[Any, ...]) -> Any:
    """The element (or mapping value) type of the first container member of ``annotation`` in ``origins``."""
    for m in _members(annotation):
        origin = typing.get_origin(m)
        if origin is not None and isinstance(origin, type) and issubclass(origin, origins):
            args = typing.get_args(m)
            return args[-1] if args and args[-1] is not Ellipsis else (args[0] if args else None)
    return None


def describe(value: Any) -> str:
    """A value as the user wrote it, short enough for one line, credentials redacted first (cut short, a
    credential would no longer be recognisable as one)."""
    text = repr(scrub_value(value))
    return text if len(text) <= 80 else text[:77] + "..."


def validation_problems(model: type[BaseModel], raw: Any, prefix: str) -> list[Problem]:
    """Validate ``raw`` against ``model`` and turn pydantic's errors into key-path problems."""
    try:
        model.model_validate(raw)
    except ValidationError as err:
        return [_problem(model, prefix, e) for e in err.errors(include_url=False)]
    return []


def _problem(model: type[BaseModel], prefix: str, error: Mapping[str, Any]) -> Problem:
    loc = tuple(error["loc"])
    path = _join(prefix, loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        retired = _retired(model, loc)
        if retired is not None:
            return Problem(path, f"no longer a setting: {retired}")
        allowed = _allowed_keys(model, loc[:-1])
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        did_you_mean = f" (did you mean '{hint[0]}'?)" if hint else ""
        return Problem(path, f"unknown key{did_you_mean}; allowed keys: {', '.join(allowed)}")
    if kind == "missing":
        return Problem(path, "missing; this key is required")
    if kind in ("model_type", "dict_type"):
        return Problem(path, f"got {describe(error.get('input'))}; expected an object with keys")
    # pydantic's wording, reworded to "got X; expected Y" so every message reads alike.
    message = str(error["msg"]).removeprefix("Value error, ")
    if message.startswith("Input should be "):
        message = "expected " + message.removeprefix("Input should be ")
    return Problem(path, f"got {describe(error.get('input'))}; {message}")


def _join(prefix: str, loc: tuple[Any, ...]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The camelCase keys accepted at ``loc`` inside ``model`` (walking nested models and containers)."""
    current: Any = model
    for part in loc:
        found = _as_model(current)
        field = _field(found, part) if found is not None and isinstance(part, str) else None
        current = field.annotation if field is not None else _element(current)
    target = _as_model(current)
    return sorted(f.alias or n for n, f in target.model_fields.items()) if target is not None else []


def _retired(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """What replaces the removed key at ``loc`` (the ``retired_keys`` of the model holding it), if any."""
    current: Any = model
    for part in loc[:-1]:
        found = _as_model(current)
        field = _field(found, part) if found is not None and isinstance(part, str) else None
        current = field.annotation if field is not None else _element(current)
    holder = _as_model(current)
    retired = getattr(holder, "retired_keys", None) if holder is not None else None
    return retired.get(str(loc[-1])) if isinstance(retired, Mapping) else None


def _field(model: type[BaseModel], key: str) -> Any:
    return next((f for n, f in model.model_fields.items() if key in (n, f.alias)), None)


def _as_model(annotation: Any) -> type[BaseModel] | None:
    """``M`` for ``M`` or ``M | None``; None for anything else."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
    if len(args) == 1 and isinstance(args[0], type) and issubclass(args[0], BaseModel):
        return args[0]
    return None


def _element(annotation: Any) -> Any:
    """The item type of ``list[T]``/``dict[str, T]`` (through ``| None``), else None."""
    if isinstance(annotation, type) and issubclass(annotation, RootModel):  # a section that is a mapping
        return _element(annotation.model_fields["root"].annotation)
    args = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
    if len(args) == 1 and getattr(args[0], "__args__", None):
        return _element(args[0])
    return args[-1] if args else None
