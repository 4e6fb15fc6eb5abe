"""``inference-platform:edge``: who may reach the inference load balancer."""

from __future__ import annotations

import ipaddress
from typing import ClassVar

from pydantic import Field

from infra.settings.base import CheckContext, Problem, Section


class EdgeSettings(Section):
    key: ClassVar[str] = "edge"

    allowed_ingress_cidrs: list[str] = Field(default_factory=list)
    """Default ``[]`` (no ingress at all). IPv4 CIDRs allowed to reach the load balancer on 443 (and 80
    for the redirect). ``0.0.0.0/0`` is accepted only when written here explicitly."""
    redirect_http: bool = True
    """Default ``true``. Open port 80 (same CIDRs) only so that the listener can redirect to HTTPS."""

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        for i, cidr in enumerate(self.allowed_ingress_cidrs):
            try:
                ipaddress.IPv4Network(cidr, strict=True)
            except ValueError as err:
                out.append(Problem(f"edge.allowedIngressCidrs[{i}]", f"got {cidr!r}; expected an IPv4 CIDR ({err})"))
        return out
