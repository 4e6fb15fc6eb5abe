"""``inference-platform:keys``: KMS customer-managed keys (cluster secrets, storage, logs)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from inference_platform.settings.base import CheckContext, Problem, Section

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
    """Default ``false``. Create EC2 Auto Scaling's service-linked role before the keys: in an account that never
    had an Auto Scaling group (the storage key's policy names the role, and KMS refuses a policy naming a missing
    role), kept ``true`` afterwards (the role is tagged as this stack's). The program checks the account before
    creating anything (infra/foundation.py): missing with ``false``, or present but not this stack's with ``true``
    (IAM refuses a second one), stops the preview naming this key."""

    create_spot_service_role: bool = False
    """Default ``false``. Create EC2 Spot's service-linked role (``AWSServiceRoleForEC2Spot``) before the keys:
    only with a spot pool (the storage key's policy then names the role) in an account that never launched
    a Spot instance; IAM refuses the role where it already exists."""

    def deletion_window(self, environment: str) -> int:
        return self.deletion_window_days or DEFAULT_DELETION_WINDOW_DAYS[environment]

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        if self.create_spot_service_role and not uses_spot(ctx.sections.get("nodePools")):
            out.append(
                Problem(
                    "keys.createSpotServiceRole",
                    "no pool uses spot capacity (nodePools.<pool>.capacityTypes), so the storage key does not "
                    "name the EC2 Spot role; leave it false",
                )
            )
        wanted = DEFAULT_DELETION_WINDOW_DAYS["production"]
        if ctx.production and self.deletion_window_days is not None and self.deletion_window_days < wanted:
            out += [
                Problem(
                    "keys.deletionWindowDays",
                    f"got {self.deletion_window_days}; production keys keep AWS's maximum of {wanted} days so a "
                    f"mistaken deletion can be cancelled (omit the key or set {wanted})",
                )
            ]
        return out


def uses_spot(node_pools: object) -> bool:
    """Whether any pool may launch Spot instances (its capacity types include ``spot``)."""
    pools = getattr(node_pools, "root", None) or {}
    return any("spot" in pool.capacity_types for pool in pools.values())
