"""``inference-platform:keys``: KMS customer-managed keys (cluster secrets, storage, logs)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from infra.settings.base import CheckContext, Problem, Section

# A short window in development keeps torn-down stacks cheap; production gets AWS's maximum (30 days)
# so that a mistaken deletion can still be cancelled.
DEFAULT_DELETION_WINDOW_DAYS = {"development": 7, "production": 30}


class KeysSettings(Section):
    key: ClassVar[str] = "keys"

    deletion_window_days: int | None = Field(default=None, ge=7, le=30)
    """Default 30 in production, 7 in development. AWS allows 7-30 days; production stacks take 30 only
    (policy ``deletion-windows`` holds the keys to it too)."""
    rotation_period_days: int = Field(default=365, ge=90, le=2560)
    """Default 365. Automatic key rotation period; AWS allows 90-2560 days."""
    create_autoscaling_service_role: bool = False
    """Default ``false``. Create EC2 Auto Scaling's service-linked role before the keys: only in an account
    that never had an Auto Scaling group (the storage key's policy names the role, and KMS refuses a
    policy naming a missing role); IAM refuses the role where it already exists."""

    def deletion_window(self, environment: str) -> int:
        return self.deletion_window_days or DEFAULT_DELETION_WINDOW_DAYS[environment]

    def problems(self, ctx: CheckContext) -> list[Problem]:
        wanted = DEFAULT_DELETION_WINDOW_DAYS["production"]
        if ctx.production and self.deletion_window_days is not None and self.deletion_window_days < wanted:
            return [
                Problem(
                    "keys.deletionWindowDays",
                    f"got {self.deletion_window_days}; production keys keep AWS's maximum of {wanted} days so a "
                    f"mistaken deletion can be cancelled (omit the key or set {wanted})",
                )
            ]
        return []
