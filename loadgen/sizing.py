"""How many load-generator workers a target request rate needs.

One worker is one Locust process (one CPU core: gevent runs on one). Its sustainable rate is
measured (``inferctl loadtest calibrate``), and only a share of it is planned (``utilization``) so that
the generator's own queueing never shows up as server latency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_UTILIZATION = 0.7
"""Plan each worker at 70 % of its measured ceiling: near the ceiling the generator delays requests."""


@dataclass(frozen=True, kw_only=True)
class WorkerPlan:
    target_rps: float
    per_worker_rps: float
    """Measured ceiling of one worker."""
    utilization: float
    workers: int

    @property
    def planned_per_worker_rps(self) -> float:
        return self.per_worker_rps * self.utilization


def workers_needed(target_rps: float, per_worker_rps: float, *, utilization: float = DEFAULT_UTILIZATION) -> WorkerPlan:
    if not target_rps > 0:
        raise ValueError(f"target rate must be > 0 requests/s, got {target_rps}")
    if not per_worker_rps > 0:
        raise ValueError(f"per-worker rate must be > 0 requests/s, got {per_worker_rps}")
    if not 0 < utilization <= 1:
        raise ValueError(f"utilization must be in (0, 1], got {utilization}")
    workers = math.ceil(target_rps / (per_worker_rps * utilization))
    return WorkerPlan(target_rps=target_rps, per_worker_rps=per_worker_rps, utilization=utilization, workers=workers)


DEFAULT_WORKER_INSTANCE = "m7i.2xlarge"
# A node's daemons (kubelet, CNI, kube-proxy, log agent) keep about one vCPU.
RESERVED_VCPU_PER_NODE = 1
HOURS_PER_MONTH = 730


@dataclass(frozen=True, kw_only=True)
class WorkerFleet:
    plan: WorkerPlan
    instance_type: str
    workers_per_node: int
    nodes: int
    price_per_hour_usd: float
    """On-demand price of the nodes together (catalog/instances.py)."""


def worker_fleet(plan: WorkerPlan, instance_type: str = DEFAULT_WORKER_INSTANCE) -> WorkerFleet:
    """Nodes of ``instance_type`` to host ``plan.workers`` one-vCPU worker pods, and their price."""
    from inference_platform import catalog

    node = catalog.instance(instance_type)
    if node.is_accelerated:
        raise ValueError(f"{instance_type} is an accelerator instance: load-test workers never run on GPU pools")
    per_node = max(1, node.vcpu - RESERVED_VCPU_PER_NODE)
    nodes = math.ceil(plan.workers / per_node)
    return WorkerFleet(
        plan=plan,
        instance_type=instance_type,
        workers_per_node=per_node,
        nodes=nodes,
        price_per_hour_usd=nodes * node.price_per_hour_usd,
    )
