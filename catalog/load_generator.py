"""What one load-generator worker sustains, and how many a target request rate needs.

One worker is one Locust process on one vCPU (gevent runs on one core). Its ceiling was measured here with
``inferctl loadtest calibrate``: one worker flat out against an Envoy ``direct_response`` stub streaming
Triton-shaped events (64 users, 3 runs each on a shared 2-core machine): 1,073 requests/s with 16 tokens
per answer, 701 with 128. The sizing plans the lower figure (answers of about 128 tokens are the common
case) at ``DEFAULT_UTILIZATION`` of it, so the generator's own queueing never shows up as server latency.
Since issue 20 the stub streams OpenAI chat-completion chunks (about the same bytes per event, plus a usage chunk
and ``[DONE]``); a run of it on this machine under a load average of 10.8 (eight sessions' tests) gave 159
requests/s at 128 tokens, a contended figure that says nothing of a worker's ceiling, so 701 stands until a
re-measurement on an idle machine (``inferctl loadtest calibrate --tokens 128``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

MEASURED_PER_WORKER_RPS: Final = 701.0
"""Requests/s one worker sustains (``inferctl loadtest calibrate --tokens 128``, README "Load tests")."""
DEFAULT_UTILIZATION: Final = 0.7
"""Share of the measured ceiling planned per worker."""
WORKER_VCPU: Final = 1.0
"""CPU a worker requests (and is limited to): one gevent loop."""
RESERVED_VCPU_PER_NODE: Final = 1
"""A node's own daemons (kubelet, CNI, kube-proxy, log agent) keep about one vCPU."""


def workers_for(target_rps: float, *, per_worker_rps: float = MEASURED_PER_WORKER_RPS,
                utilization: float = DEFAULT_UTILIZATION) -> int:  # fmt: skip
    """Workers that offer ``target_rps`` with each at ``utilization`` of ``per_worker_rps``."""
    if not target_rps > 0 or not per_worker_rps > 0 or not 0 < utilization <= 1:
        raise ValueError(
            f"target_rps={target_rps}, per_worker_rps={per_worker_rps}, utilization={utilization}: "
            "rates > 0 and utilization in (0, 1]"
        )
    return math.ceil(target_rps / (per_worker_rps * utilization))


def workers_per_node(vcpu: int, worker_vcpu: float = WORKER_VCPU) -> int:
    """Workers one node of ``vcpu`` vCPUs holds beside its daemons (at least one)."""
    return max(1, math.floor((vcpu - RESERVED_VCPU_PER_NODE) / worker_vcpu))


# --- pricing a planned load test (costing reads plans as plain dicts) ------------------------------------------

JOB: Final = "kubernetes:batch/v1:Job"
NODE_GROUP: Final = "aws:eks/nodeGroup:NodeGroup"
LOAD_TEST_WORKER_LABELS: Final = {"app.kubernetes.io/name": "loadtest", "app.kubernetes.io/component": "worker"}
"""The labels of the load test's worker Job (components/verification/load_test.py)."""
LOAD_SECONDS_ANNOTATION: Final = "inference-platform/load-seconds"
"""On the worker Job: seconds of arrivals per run."""


@dataclass(frozen=True, kw_only=True)
class WorkerRun:
    """What one run of the planned load test takes from the system node group."""

    workers: int
    cpu: float
    """vCPU per worker."""
    nodes: int
    """Nodes of the priced type the workers need (one node's daemons keep a vCPU)."""
    load_hours: float
    """Hours of arrivals per run."""
    deadline_hours: float
    """The run's hard bound (the Job's activeDeadlineSeconds)."""


def is_load_test_workers(resource: Mapping[str, Any]) -> bool:
    labels = ((resource.get("inputs") or {}).get("metadata") or {}).get("labels") or {}
    return resource.get("type") == JOB and LOAD_TEST_WORKER_LABELS.items() <= labels.items()


def system_node_types(resources: Iterable[Mapping[str, Any]]) -> list[str]:
    """Instance types of the system node group (``node-role: system``), where load-test workers run."""
    for r in resources:
        inputs = r.get("inputs") or {}
        if r.get("type") == NODE_GROUP and (inputs.get("labels") or {}).get("node-role") == "system":
            return [str(t) for t in inputs.get("instanceTypes") or []]
    return []


def worker_run(inputs: Mapping[str, Any], node_vcpu: int) -> WorkerRun:
    """The workers' nodes and hours per run, from the worker Job's inputs."""
    spec = inputs.get("spec") or {}
    workers = int(float(spec.get("parallelism") or 1))
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    cpu = max((_cpu(((c.get("resources") or {}).get("requests") or {}).get("cpu")) for c in containers), default=1.0)
    annotations = (inputs.get("metadata") or {}).get("annotations") or {}
    load_hours = float(annotations.get(LOAD_SECONDS_ANNOTATION, 0)) / 3600
    deadline_hours = float(spec.get("activeDeadlineSeconds") or 0) / 3600 or load_hours
    nodes = math.ceil(workers / workers_per_node(node_vcpu, cpu))
    return WorkerRun(workers=workers, cpu=cpu, nodes=nodes, load_hours=load_hours, deadline_hours=deadline_hours)


def _cpu(value: Any) -> float:
    """A Kubernetes CPU quantity (``"1"``, ``"500m"``, 2.0) in vCPU; unset is one."""
    if value is None:
        return WORKER_VCPU
    text = str(value)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
