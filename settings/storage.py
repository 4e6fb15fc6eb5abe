"""``inference-platform:storage``: the S3 model bucket, its lifecycle and its access-log bucket."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from inference_platform.settings.base import CheckContext, Problem, Section

# S3 refuses lifecycle transitions to STANDARD_IA before an object is 30 days old (current and
# noncurrent alike); Intelligent-Tiering has no minimum.
STANDARD_IA_MIN_DAYS = 30
_PREFIX = re.compile(r"^[A-Za-z0-9!_.*'()/-]+/$")
_MODEL_PREFIX = re.compile(r"^[A-Za-z0-9_./-]+/$")


def _prefix(value: str) -> str:
    if value.startswith("/") or "//" in value or not _PREFIX.match(value):
        raise ValueError("expected an S3 key prefix such as 'models/' (no leading '/', ends with '/')")
    return value


class ColdTag(Section):
    # A tag's key, a field: the ClassVar Section.key names a top-level section, which this nested model is not.
    key: str = Field(min_length=1, max_length=128)  # type: ignore[misc]  # a field over Section's ClassVar key
    """Required. Object tag key marking a cold object."""
    value: str = Field(min_length=1, max_length=256)
    """Required. Object tag value marking a cold object."""


class LifecycleSettings(Section):
    noncurrent_version_transition_days: int | None = Field(default=30, gt=0)
    """Default 30. Days after an object version is replaced before it moves to STANDARD_IA (at least 30,
    S3's minimum); ``null`` keeps old versions in STANDARD until they expire."""
    noncurrent_version_expiration_days: int = Field(default=90, gt=0)
    """Default 90. Days after an object version is replaced (or deleted) before S3 removes it: the
    window in which an overwritten or deleted model can still be restored."""
    abort_incomplete_multipart_upload_days: int = Field(default=7, gt=0)
    """Default 7. Days before the parts of an unfinished multipart upload are discarded."""
    cold_prefix: str | None = "archive/"
    """Default ``archive/``. Objects under this prefix move to ``coldStorageClass``; ``null`` turns the
    prefix rule off."""
    cold_tag: ColdTag | None = Field(default_factory=lambda: ColdTag(key="tier", value="cold"))
    """Default ``{key: tier, value: cold}``. Objects carrying this tag move to ``coldStorageClass`` wherever
    they are; ``null`` turns the tag rule off."""
    cold_storage_class: Literal["STANDARD_IA", "INTELLIGENT_TIERING"] = "STANDARD_IA"
    """Default ``STANDARD_IA``. Where cold objects go."""
    cold_transition_days: int = Field(default=30, gt=0)
    """Default 30. Object age in days before a cold object moves (at least 30 for STANDARD_IA)."""

    @field_validator("cold_prefix")
    @classmethod
    def _cold_prefix(cls, value: str | None) -> str | None:
        return value if value is None else _prefix(value)

    def problems_at(self, path: str) -> list[Problem]:
        out = []
        transition = self.noncurrent_version_transition_days
        expiration = self.noncurrent_version_expiration_days
        if transition is not None:
            if transition >= expiration:
                out.append(
                    Problem(
                        f"{path}.noncurrentVersionTransitionDays",
                        f"got {transition}; old versions expire after {expiration} days "
                        "(noncurrentVersionExpirationDays), so the transition must come before that",
                    )
                )
            elif transition < STANDARD_IA_MIN_DAYS:
                out.append(
                    Problem(
                        f"{path}.noncurrentVersionTransitionDays",
                        f"got {transition}; S3 moves objects to STANDARD_IA after {STANDARD_IA_MIN_DAYS} days at the earliest",
                    )
                )
        if self.cold_storage_class == "STANDARD_IA" and self.cold_transition_days < STANDARD_IA_MIN_DAYS:
            out.append(
                Problem(
                    f"{path}.coldTransitionDays",
                    f"got {self.cold_transition_days}; S3 moves objects to STANDARD_IA after "
                    f"{STANDARD_IA_MIN_DAYS} days at the earliest (INTELLIGENT_TIERING has no minimum)",
                )
            )
        return out


class AccessLogSettings(Section):
    retention_days: int = Field(default=365, gt=0)
    """Default 365. Days S3 server access logs are kept in the log bucket."""


class StorageSettings(Section):
    key: ClassVar[str] = "storage"

    model_prefix: str = "models/"
    """Default ``models/``. Key prefix of model artifacts (``<prefix><name>/<version>/``): the only
    prefix the inference pods may read."""
    force_destroy: bool = False
    """Default ``false``. Let `pulumi destroy` delete a bucket that still holds objects. Development
    only: refused in production, where buckets are protected and retained."""
    lifecycle: LifecycleSettings = Field(default_factory=LifecycleSettings)
    access_logs: AccessLogSettings = Field(default_factory=AccessLogSettings)

    @field_validator("model_prefix")
    @classmethod
    def _model_prefix(cls, value: str) -> str:
        # The prefix is part of every model URI the pods' commands and stage script take (settings/types.py
        # SHELL_SAFE): S3's other "safe" characters ! * ' ( ) are shell metacharacters.
        value = _prefix(value)
        if not _MODEL_PREFIX.match(value):
            raise ValueError("expected an S3 key prefix of letters, digits and _.- such as 'models/' (ends with '/')")
        return value

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = self.lifecycle.problems_at("storage.lifecycle")
        if self.force_destroy and ctx.production:
            out.append(
                Problem(
                    "storage.forceDestroy",
                    "is true in a production stack; production model data is protected and never force-destroyed",
                )
            )
        prefix = self.lifecycle.cold_prefix
        if prefix is not None and (prefix.startswith(self.model_prefix) or self.model_prefix.startswith(prefix)):
            out.append(
                Problem(
                    "storage.lifecycle.coldPrefix",
                    f"got {prefix!r}, which overlaps modelPrefix {self.model_prefix!r}: every served model would "
                    "go cold; tag cold versions with coldTag instead",
                )
            )
        return out
