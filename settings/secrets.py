"""``inference-platform:secrets``: generated inference API keys and how long deleted secrets stay recoverable.

The NGC API key and the Hugging Face token are not here: they are top-level secret keys (``ngcApiKey``,
``hfToken``) set with `pulumi config set --secret`, so their values never sit in a stack file.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from inference_platform.settings.base import CheckContext, Problem, Section

# A mistaken deletion stays recoverable for AWS's maximum in production; development tears down quickly.
DEFAULT_RECOVERY_WINDOW_DAYS = {"development": 7, "production": 30}
# 32 characters of a 62-letter alphabet is ~190 bits: far beyond online guessing.
MIN_API_KEY_LENGTH = 32


class ApiKeySettings(Section):
    count: int = Field(default=2, ge=1, le=20)
    """Default 2 (rotate one while the other serves). Number of inference API keys, 1-20."""
    length: int = Field(default=48, ge=MIN_API_KEY_LENGTH, le=256)
    """Default 48. Characters per key, 32-256."""
    alphabet: Literal["alphanumeric", "urlsafe"] = "alphanumeric"
    """Default ``alphanumeric`` (A-Z a-z 0-9); ``urlsafe`` adds ``-`` and ``_``."""


class SecretsSettings(Section):
    key: ClassVar[str] = "secrets"

    api_keys: ApiKeySettings = Field(default_factory=ApiKeySettings)
    recovery_window_days: int | None = Field(default=None, ge=7, le=30)
    """Default 30 in production, 7 in development. Days a deleted secret can still be restored (AWS: 7-30);
    production stacks take 30 only."""

    def recovery_window(self, environment: str) -> int:
        return self.recovery_window_days or DEFAULT_RECOVERY_WINDOW_DAYS[environment]

    def problems(self, ctx: CheckContext) -> list[Problem]:
        wanted = DEFAULT_RECOVERY_WINDOW_DAYS["production"]
        if ctx.production and self.recovery_window_days is not None and self.recovery_window_days < wanted:
            return [
                Problem(
                    "secrets.recoveryWindowDays",
                    f"got {self.recovery_window_days}; production secrets stay recoverable for AWS's maximum of "
                    f"{wanted} days (omit the key or set {wanted})",
                )
            ]
        return []
