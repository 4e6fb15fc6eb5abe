"""``inference-platform:fsx``: the optional FSx for Lustre model cache in front of the model bucket."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from inference_platform.catalog.lustre import capacity_problem, throughput_problem
from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.types import ShellWord

DEPLOYMENT_TYPE = "PERSISTENT_2"


class FsxSettings(Section):
    key: ClassVar[str] = "fsx"

    enabled: bool = False
    """Default ``false`` (costly). A PERSISTENT_2 Lustre file system linked to the model bucket."""
    storage_capacity_gib: int = Field(default=1200, alias="storageCapacityGiB")
    """Default 1200. GiB of SSD: 1200 or a multiple of 2400."""
    per_unit_storage_throughput: int = 250
    """Default 250. MB/s per TiB of storage; PERSISTENT_2 offers 125, 250, 500 or 1000."""
    availability_zone: str | None = None
    """Default: the stack's first zone. PERSISTENT_2 lives in one zone; put it where the GPUs are. Pods
    of a pool spanning zones (prod's EFA pool has a node group per zone) stage engines from the other
    zones across AZs: slower, and billed as inter-AZ traffic per pod start; serving itself never
    reads FSx once the engine is on the node."""
    file_system_path: ShellWord = "/models"
    """Default ``/models``. Where the model prefix of the bucket appears inside the file system."""
    auto_import_events: list[Literal["NEW", "CHANGED", "DELETED"]] = Field(
        # mypy reads the lambda's list as list[str]: Field's two-signature default_factory gives it no context.
        default_factory=lambda: ["NEW", "CHANGED"],  # type: ignore[arg-type]  # see above
        min_length=1,
    )
    """Default ``[NEW, CHANGED]``. S3 events the file system imports on its own; add ``DELETED`` to also
    drop files whose objects were deleted."""

    @field_validator("file_system_path")
    @classmethod
    def _path(cls, value: str) -> str:
        if not value.startswith("/") or value == "/" or value.endswith("/") or "//" in value:
            raise ValueError("expected an absolute path below the root such as '/models' (no trailing '/')")
        return value

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        throughput = throughput_problem(DEPLOYMENT_TYPE, self.per_unit_storage_throughput)
        if throughput:
            out.append(Problem("fsx.perUnitStorageThroughput", throughput))
        capacity = capacity_problem(self.storage_capacity_gib)
        if capacity:
            out.append(Problem("fsx.storageCapacityGiB", capacity))
        if len(set(self.auto_import_events)) != len(self.auto_import_events):
            out.append(Problem("fsx.autoImportEvents", f"got {self.auto_import_events}; an event is repeated"))
        zones = _stack_zones(ctx)
        if self.availability_zone is not None and zones is not None and self.availability_zone not in zones:
            out.append(
                Problem(
                    "fsx.availabilityZone",
                    f"got {self.availability_zone!r}; the stack's zones (network.availabilityZones, or the region's "
                    f"first network.azCount) are {', '.join(zones)}",
                )
            )
        return out


def _stack_zones(ctx: CheckContext) -> list[str] | None:
    """The zones the network will use, when the settings alone can tell (as the foundation picks them)."""
    network = ctx.sections.get("network")
    if network is None or ctx.region is None:
        return None
    explicit = getattr(network, "availability_zones", None)
    return list(explicit) if explicit else sorted(ctx.region.zones)[: getattr(network, "az_count", 0)]
