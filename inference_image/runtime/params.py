"""Typed reads of a Triton model config's ``parameters`` (every value arrives as a string)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


class ModelConfigError(ValueError):
    """A parameter is missing or malformed; the message names the model and the key."""


class Parameters:
    def __init__(self, model_config: Mapping[str, Any] | str) -> None:
        config = json.loads(model_config) if isinstance(model_config, str) else model_config
        self.model = str(config.get("name", "?"))
        self.raw: dict[str, str] = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}

    def text(self, key: str, *, default: str | None = None) -> str:
        value = self.raw.get(key)
        if value is None or value == "":
            if default is not None:
                return default
            raise ModelConfigError(f"model {self.model}: parameter {key!r} is required")
        if value.startswith("${") or value.startswith("{{"):
            raise ModelConfigError(f"model {self.model}: parameter {key!r} was never rendered ({value})")
        return value

    def flag(self, key: str, *, default: bool | None = None) -> bool:
        value = self.text(key, default=None if default is None else str(default).lower()).lower()
        if value in ("true", "1", "yes"):
            return True
        if value in ("false", "0", "no"):
            return False
        raise ModelConfigError(f"model {self.model}: parameter {key!r} must be true or false, got {value!r}")

    def integer(self, key: str, *, default: int | None = None, minimum: int = 0) -> int:
        value = self.text(key, default=None if default is None else str(default))
        try:
            number = int(value)
        except ValueError:
            raise ModelConfigError(f"model {self.model}: parameter {key!r} must be an integer, got {value!r}") from None
        if number < minimum:
            raise ModelConfigError(f"model {self.model}: parameter {key!r} must be >= {minimum}, got {number}")
        return number

    def unsupported(self, *keys: str, why: str) -> None:
        """Refuse a non-empty value for any of ``keys``: NVIDIA's template has them, this model does not
        implement what they switch on (checked rather than silently ignored)."""
        found = [f"{key}={self.raw[key]!r}" for key in keys if self.raw.get(key, "") != ""]
        if found:
            raise ModelConfigError(f"model {self.model}: {', '.join(found)} not supported: {why}")
