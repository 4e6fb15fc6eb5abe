"""``inference-platform:network``: the VPC, its subnets, NAT, endpoints and flow logs."""

from __future__ import annotations

import ipaddress
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from inference_platform.catalog import endpoint_services
from inference_platform.planners.cidr import MAX_ZONES, CarveError, carve
from inference_platform.settings.base import CheckContext, Problem, Section

# CloudWatch Logs accepts only these retention periods (PutRetentionPolicy).
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192,
                      2557, 2922, 3288, 3653)  # fmt: skip
_PRIVATE_RANGES = tuple(
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
)


class FlowLogSettings(Section):
    retention_days: int = 30
    """Default 30. Days CloudWatch keeps VPC flow logs; one of CloudWatch's fixed periods."""
    traffic_type: Literal["ALL", "ACCEPT", "REJECT"] = "ALL"
    """Default ``ALL``."""
    max_aggregation_interval: Literal[60, 600] = 600
    """Default 600 seconds; 60 gives finer records at a higher ingestion cost."""

    @field_validator("retention_days")
    @classmethod
    def _retention(cls, days: int) -> int:
        if days not in LOG_RETENTION_DAYS:
            raise ValueError(f"allowed: {', '.join(map(str, LOG_RETENTION_DAYS))}")
        return days


class NetworkSettings(Section):
    key: ClassVar[str] = "network"

    cidr: str = "10.0.0.0/16"
    """Default ``10.0.0.0/16``. VPC IPv4 block, /16 to /24 inside RFC 1918 or 100.64.0.0/10."""
    az_count: int = Field(default=2, ge=1, le=MAX_ZONES)
    """Default 2. Availability Zones to spread subnets over, 1-6 and at most what the region offers."""
    availability_zones: list[str] | None = None
    """Default: the region's first ``azCount`` zones. Explicit zone names, exactly ``azCount`` of them."""
    nat_gateways: Literal["single", "perAz", "none"] = "single"
    """Default ``single``. ``perAz`` survives a zone outage; ``none`` needs ``interfaceEndpoints``."""
    intra_subnets: bool = False
    """Default ``false``. Extra subnets without any internet route, for EKS control-plane ENIs."""
    interface_endpoints: bool = False
    """Default ``false``. Interface endpoints for the services the cluster calls (see
    ``interfaceEndpointServices``): each costs ~$0.01 per hour per zone (~$7.30 a month per zone) plus
    $0.01 per GB, so development stacks usually do without."""
    interface_endpoint_services: list[str] | None = None
    """Default: every service the cluster calls (inference_platform.catalog.endpoint_services.required_services:
    EC2, ECR api/dkr, STS, Logs, EKS Pod Identity, Secrets Manager, KMS, Elastic Load Balancing, plus
    SQS, SSM and EKS with Karpenter or Auto Scaling and EKS without it, FSx with the FSx cache, and SQS with the
    batch lane). An explicit list replaces it; names from ``KNOWN_SERVICES`` only. Needs ``interfaceEndpoints: true``."""
    private_subnet_prefix: int = Field(default=19, ge=16, le=28)
    """Default 19 (8,192 addresses: VPC CNI gives every pod a VPC address)."""
    public_subnet_prefix: int = Field(default=24, ge=16, le=28)
    """Default 24. Load balancers and NAT gateways only."""
    intra_subnet_prefix: int = Field(default=26, ge=16, le=28)
    """Default 26. EKS needs at least /28 per control-plane subnet."""
    flow_logs: FlowLogSettings = Field(default_factory=FlowLogSettings)

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, cidr: str) -> str:
        try:
            vpc = ipaddress.IPv4Network(cidr, strict=True)
        except ValueError as err:
            raise ValueError(f"expected an IPv4 CIDR block such as 10.0.0.0/16 ({err})") from None
        if not 16 <= vpc.prefixlen <= 24:
            raise ValueError("expected a /16 to /24 block")
        if not any(vpc.subnet_of(r) for r in _PRIVATE_RANGES):
            raise ValueError("expected a block inside 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or 100.64.0.0/10")
        return cidr

    def endpoint_services(self, *, karpenter: bool, fsx: bool, batch: bool = False) -> tuple[str, ...]:
        """The interface endpoints to create: none unless enabled, else the explicit list or every
        service the cluster calls."""
        if not self.interface_endpoints:
            return ()
        if self.interface_endpoint_services is not None:
            return tuple(self.interface_endpoint_services)
        return endpoint_services.required_services(karpenter=karpenter, fsx=fsx, batch=batch)

    @property
    def subnet_prefixes(self) -> dict[str, int]:
        # Intra space is always reserved so enabling it later moves nothing (inference_platform.components.cidr).
        return {
            "private": self.private_subnet_prefix,
            "public": self.public_subnet_prefix,
            "intra": self.intra_subnet_prefix,
        }

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = self._cidr_problems()
        if ctx.region is not None:
            offered = len(ctx.region.zones)
            if self.az_count > offered:
                out.append(Problem("network.azCount", f"got {self.az_count}; {ctx.region.name} offers {offered} zones"))
            for i, zone in enumerate(self.availability_zones or ()):
                if zone not in ctx.region.zones:
                    out.append(
                        Problem(
                            f"network.availabilityZones[{i}]",
                            f"got {zone!r}; {ctx.region.name} has {', '.join(ctx.region.zones)}",
                        )
                    )
        if self.availability_zones is not None:
            zones = self.availability_zones
            if len(zones) != self.az_count or len(set(zones)) != len(zones):
                out.append(
                    Problem(
                        "network.availabilityZones", f"got {zones}; expected {self.az_count} distinct zones (azCount)"
                    )
                )
        out += self._endpoint_problems(ctx)
        if self.nat_gateways == "none" and not self.interface_endpoints:
            out.append(
                Problem(
                    "network.natGateways",
                    "'none' leaves nodes without a route to ECR/STS; set interfaceEndpoints: true",
                )
            )
        return out

    def _endpoint_problems(self, ctx: CheckContext) -> list[Problem]:
        services = self.interface_endpoint_services
        if services is None:
            return []
        at = "network.interfaceEndpointServices"
        out = [
            Problem(f"{at}[{i}]", f"got {name!r}; allowed: {', '.join(sorted(endpoint_services.KNOWN_SERVICES))}")
            for i, name in enumerate(services)
            if name not in endpoint_services.KNOWN_SERVICES
        ]
        repeated = sorted({s for s in services if services.count(s) > 1})
        if repeated:
            out.append(Problem(at, f"got {services}; {', '.join(repeated)} repeated"))
        if not self.interface_endpoints:
            out.append(Problem(at, f"got {services}; has no effect without interfaceEndpoints: true"))
        elif self.nat_gateways == "none":
            cluster, fsx, batch = ctx.sections.get("cluster"), ctx.sections.get("fsx"), ctx.sections.get("batch")
            needed = endpoint_services.required_services(
                karpenter=getattr(cluster, "provisioning", "managed") == "karpenter",
                fsx=bool(getattr(fsx, "enabled", False)),
                batch=bool(getattr(batch, "enabled", False)),
            )
            missing = [s for s in needed if s not in services]
            if missing:
                why = _why_needed(missing, cluster, fsx, batch)
                out.append(
                    Problem(
                        at,
                        f"got {services}; with natGateways: none the cluster has no other path to {', '.join(missing)}"
                        f" ({why})",
                    )
                )
        return out

    def _cidr_problems(self) -> list[Problem]:
        try:
            carve(self.cidr, self.az_count, self.subnet_prefixes)
        except CarveError as err:
            return [Problem("network.cidr", f"got {self.cidr!r}; {err}")]
        return []


def _why_needed(missing: list[str], cluster: object, fsx: object, batch: object) -> str:
    """Which setting makes each missing service needed: the base set, the provisioning mode's, the cache's, the
    lane's (catalog/endpoint_services.py required_services)."""
    karpenter = getattr(cluster, "provisioning", "managed") == "karpenter"
    own = endpoint_services.KARPENTER_SERVICES if karpenter else endpoint_services.MANAGED_SERVICES
    groups = [
        ("every cluster", endpoint_services.BASE_SERVICES),
        (f"cluster.provisioning: {getattr(cluster, 'provisioning', 'managed')}", own),
        ("fsx.enabled: true", endpoint_services.FSX_SERVICES if getattr(fsx, "enabled", False) else ()),
        ("batch.enabled: true", endpoint_services.BATCH_SERVICES if getattr(batch, "enabled", False) else ()),
    ]
    parts, said = [], set()
    for reason, services in groups:
        named = [s for s in missing if s in services and s not in said]
        said.update(named)
        if named:
            parts.append(f"{', '.join(named)} for {reason}")
    return "; ".join(parts)
