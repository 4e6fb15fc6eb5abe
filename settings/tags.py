"""``inference-platform:tags``: who owns the stack and who pays for it (tagged on every AWS resource)."""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field

from inference_platform.settings.base import CheckContext, Problem, Section, describe

# Keys the platform sets itself; `extra` may not override them.
RESERVED_TAG_KEYS = frozenset({"project", "stack", "owner", "cost-center"})
_TAG_VALUE = r"^[\w\s.:/=+\-@]*$"
r"""AWS's tag key and value characters (letters, digits, spaces and ``_.:/=+-@``; the EC2 CreateTags and
Resource Groups Tagging API pattern ``^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$``): anything else fails the deploy."""


class TagsSettings(Section):
    key: ClassVar[str] = "tags"

    owner: str = Field(min_length=1, max_length=256, pattern=_TAG_VALUE)
    """Required. Team or person accountable for the stack (tag ``owner``)."""
    cost_center: str = Field(min_length=1, max_length=256, pattern=_TAG_VALUE)
    """Required. Cost center billed for the stack (tag ``cost-center``)."""
    extra: dict[str, str] = Field(default_factory=dict)
    """Default ``{}``. Additional tags for every taggable resource; may not reuse the platform's keys."""

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        for k, v in self.extra.items():
            path = f"tags.extra.{k}"
            if k in RESERVED_TAG_KEYS:
                out.append(Problem(path, f"'{k}' is set by the platform; choose another key"))
            elif k.lower().startswith("aws:") or not 1 <= len(k) <= 128:
                out.append(Problem(path, "tag keys are 1-128 characters and may not start with 'aws:'"))
            elif not re.fullmatch(_TAG_VALUE, k):
                out.append(
                    Problem(path, "expected a tag key of letters, digits, spaces and _.:/=+-@ (AWS refuses others)")
                )
            if not re.fullmatch(_TAG_VALUE, v):
                out.append(
                    Problem(
                        path, f"got {describe(v)}; expected letters, digits, spaces and _.:/=+-@ (AWS refuses others)"
                    )
                )
            elif len(v) > 256:
                out.append(Problem(path, f"value is {len(v)} characters; AWS allows at most 256"))
        return out
