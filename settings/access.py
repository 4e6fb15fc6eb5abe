"""``inference-platform:access``: the IAM roles that administer the stack's keys (and later its cluster)."""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field

from inference_platform.settings.base import CheckContext, Problem, Section

_ROLE_ARN = re.compile(r"^arn:(aws|aws-us-gov|aws-cn):iam::(\d{12}):role/[\w+=,.@/-]{1,512}$")


class AccessSettings(Section):
    key: ClassVar[str] = "access"

    admin_role_arns: list[str] = Field(default_factory=list)
    """Default ``[]``. IAM role ARNs granted key administration (never use of key material)."""
    read_only_role_arns: list[str] = Field(default_factory=list)
    """Default ``[]``. IAM role ARNs granted read-only access."""

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        for field in ("admin_role_arns", "read_only_role_arns"):
            alias = type(self).model_fields[field].alias
            for i, arn in enumerate(getattr(self, field)):
                match = _ROLE_ARN.match(arn)
                path = f"access.{alias}[{i}]"
                if not match:
                    out.append(
                        Problem(path, f"got {arn!r}; expected an IAM role ARN arn:aws:iam::<12 digits>:role/<name>")
                    )
                elif ctx.region is not None and match.group(1) != ctx.region.partition:
                    out.append(
                        Problem(
                            path,
                            f"partition '{match.group(1)}' does not match region {ctx.region.name} ({ctx.region.partition})",
                        )
                    )
        return out
