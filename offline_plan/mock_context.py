"""What every mock table shares: the region/account context, the signatures of invoke and resource
answers, and the deterministic digest ids are made from. The tables (mocks_*.py) and the mocks that
merge them (mocks.py) import this module, never each other."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from inference_platform.catalog.regions import REGIONS, Region

OFFLINE_ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class MockContext:
    region: Region
    account_id: str = OFFLINE_ACCOUNT_ID
    service_linked_roles: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: {"AWSServiceRoleForAutoScaling": {}}
    )
    """Service-linked roles the offline account has, name -> tags: an account that has had an Auto Scaling group
    (the plan cannot know the real account; infra/foundation.py's preflight judges that at preview)."""

    serving_image_digest: str | None = None
    """The stack's ``inference.image.digest``: the offline account's image cache snapshot holds that image, as
    ``inferctl image-cache build`` leaves it (infra/image_cache.py compares them)."""

    @property
    def partition(self) -> str:
        return self.region.partition

    @classmethod
    def for_region(cls, name: str | None) -> MockContext:
        return cls(REGIONS.get(name or DEFAULT_REGION, REGIONS[DEFAULT_REGION]))


def digest(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


Invoke = Callable[[dict[str, Any], MockContext], dict[str, Any]]

Outputs = Callable[[str, dict[str, Any], MockContext, str], dict[str, Any]]
