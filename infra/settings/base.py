"""Building blocks of the typed stack settings: the section base model and the problem report.

Every section is a pydantic model that forbids unknown keys and uses the camelCase names written in
the stack file. Semantic checks that need more than one field (or another section) are methods
returning :class:`Problem` lists, so one pass reports every problem instead of the first one.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, RootModel, ValidationError
from pydantic.alias_generators import to_camel

if TYPE_CHECKING:
    from components.catalog.regions import Region


@dataclass(frozen=True)
class Problem:
    """One bad config value: where it is (as written in the stack file), what it was, what is allowed."""

    path: str
    message: str

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
    sections: Mapping[str, Section] = field(default_factory=dict)

    @property
    def production(self) -> bool:
        return self.environment == "production"


class Section(BaseModel):
    """A namespaced config object such as ``inference-platform:network``."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        str_strip_whitespace=True,
    )

    # The top-level config key this section is read from (without the project namespace).
    key: ClassVar[str]

    def problems(self, ctx: CheckContext) -> list[Problem]:
        """Semantic problems of this section; the default has none."""
        return []


def describe(value: Any) -> str:
    """A value as the user wrote it, short enough for one line."""
    text = repr(value)
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
