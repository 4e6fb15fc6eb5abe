"""What the endpoint picker costs (issue 29, ``edge.routing.mode: inference-pool``): its replicas' requests on the
system nodes. Its pods come from the ``llm-d-router-standalone`` release (``catalog.endpoint_picker``), which the
estimate (planners/costing.py) prices with no line of its own: they run on the system node group, whose line prices
its nodes whatever runs there. This names the picker's share of those nodes, the way a showback does: per replica,
the larger of its CPU and memory requests as a share of one system node (what the rest of the node can no longer
hold), at the group's cheapest type's on-demand price. ``inferctl cost`` and the plan's summary line (the PR comment)
print it; the total is unchanged (no double count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inference_platform.catalog import endpoint_picker, prices

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class PickerCost:
    replicas: int
    cpu: float
    """vCPU one replica requests."""
    memory_gib: float
    """GiB one replica requests."""
    node_type: str
    node_vcpu: int
    node_memory_gib: float
    node_hour: float
    """On-demand $/h of the system group's cheapest type."""

    @property
    def node_share(self) -> float:
        """System nodes the replicas take together (the larger of the CPU and memory shares, per replica)."""
        return self.replicas * max(self.cpu / self.node_vcpu, self.memory_gib / self.node_memory_gib)

    @property
    def monthly(self) -> float:
        return self.node_share * self.node_hour * prices.HOURS_PER_MONTH


def picker_cost(resources: Sequence[Mapping[str, Any]], region: str) -> PickerCost | None:
    """The picker's share of the system nodes; None without the picker's release or a priced system node type."""
    from inference_platform import catalog
    from inference_platform.catalog import load_generator
    from inference_platform.planners.quantities import parse_quantity

    release = next((r for r in resources if r.get("type") == RELEASE_TYPE
                    and str((r.get("inputs") or {}).get("chart", "")) == endpoint_picker.CHART.chart), None)  # fmt: skip
    if release is None:
        return None
    epp = ((((release.get("inputs") or {}).get("values") or {}).get("router") or {}).get("epp")) or {}
    requests = (epp.get("resources") or {}).get("requests") or {}
    replicas = int(float(epp.get("replicas") or endpoint_picker.REPLICAS))
    cpu = float(parse_quantity(str(requests.get("cpu", "0"))))
    memory_gib = float(parse_quantity(str(requests.get("memory", "0")))) / 2**30
    types = []
    for name in load_generator.system_node_types(resources):
        try:
            types.append(catalog.instance(name))
        except catalog.CatalogError:
            continue
    if not types or replicas < 1:
        return None
    node = min(types, key=lambda t: t.price_per_hour_usd)
    hour = prices.instance_hour(node.name, region)
    if hour is None:
        return None  # the type is not priced in this region: the system group's line says so
    return PickerCost(replicas=replicas, cpu=cpu, memory_gib=memory_gib, node_type=node.name, node_vcpu=node.vcpu,
                      node_memory_gib=float(node.ram_gib), node_hour=hour)  # fmt: skip


def picker_line(c: PickerCost) -> str:
    from inference_platform.inferctl.cost.render import money

    return (
        f"Endpoint picker (edge.routing inference-pool): {c.replicas} replica(s) x {c.cpu:g} vCPU / "
        f"{c.memory_gib:g} GiB requested take {c.node_share:.2f} of a {c.node_type} system node "
        f"({c.node_vcpu} vCPU, {c.node_memory_gib:g} GiB, ${c.node_hour:.3f}/h): {money(c.monthly)}/month of the "
        "system node group's line, not added to the total"
    )


def as_json(c: PickerCost) -> dict[str, Any]:
    return {
        "replicas": c.replicas,
        "cpu": c.cpu,
        "memory_gib": c.memory_gib,
        "node_type": c.node_type,
        "node_share": round(c.node_share, 4),
        "monthly_usd_expected": round(c.monthly, 2),
    }
