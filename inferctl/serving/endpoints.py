"""The local edge's endpoints, delivered as the cluster's gateway delivers them: EDS, from the EndpointSlice conditions.

In the cluster a replica leaves the edge through its EndpointSlice: the pod is deleted (a scale-down, the night's
scale-down to the floor, a drain) and the endpoint controller marks it ``terminating`` and not ``ready`` while its
server still answers (``serving``), or its readiness probe fails (not ``ready``, not ``serving``). Envoy Gateway
v1.9.0 does not drop such an endpoint: it keeps it in the cluster's EDS with ``health_status: DRAINING``
(internal/gatewayapi/route.go ``getIREndpointsFromEndpointSlice``, internal/xds/translator/cluster.go), so Envoy
sends it no new request while the requests it already holds run on; the endpoint goes only when the pod is gone.

The local rig mirrors that path, not a stand-in for it: the inference cluster is an EDS cluster reading this
module's file (a ``path_config_source`` Envoy watches), and :class:`LocalEndpoints` writes it from each replica's
EndpointSlice conditions with Envoy Gateway's own translation (:func:`gateway_draining`). An active health check
on the readiness path would be a different mechanism: Envoy Gateway renders none unless a BackendTrafficPolicy asks,
and it would eject the host only after its own failures, not when Kubernetes says the pod is terminating.
Pinned: tests/data/upstream/envoy_gateway_v1.9.0_endpoint_draining.json.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENDPOINT_TYPE = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
DRAINING = "DRAINING"
UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class Conditions:
    """An EndpointSlice endpoint's conditions (discovery.k8s.io/v1 EndpointConditions; None is unset)."""

    ready: bool | None
    serving: bool | None
    terminating: bool | None


READY = Conditions(ready=True, serving=True, terminating=False)
"""A running pod whose readiness probe passes."""
POD_DELETED = Conditions(ready=False, serving=True, terminating=True)
"""A deleted pod (scale-down) whose server still answers: ``ready`` is never true for a terminating endpoint,
``serving`` is ``ready`` regardless of terminating (k8s.io/api discovery/v1 EndpointConditions)."""
NOT_READY = Conditions(ready=False, serving=False, terminating=False)
"""A running pod whose readiness probe fails."""


def gateway_draining(conditions: Conditions) -> bool:
    """Whether Envoy Gateway v1.9.0 marks the endpoint draining (route.go ``getIREndpointsFromEndpointSlice``)."""
    if conditions.serving is not None and conditions.terminating is not None:
        return conditions.terminating or not conditions.serving
    return conditions.ready is not None and not conditions.ready


def health_status(conditions: Conditions) -> str:
    """The EDS ``health_status`` Envoy Gateway v1.9.0 gives the endpoint (cluster.go: DRAINING, else UNKNOWN)."""
    return DRAINING if gateway_draining(conditions) else UNKNOWN


def eds_config(path: Path) -> dict[str, Any]:
    """The inference cluster's ``eds_cluster_config``: ``path`` watched through its directory (an atomic rename of a
    new file into it is an update, as Envoy's path_config_source documents for ``watched_directory``)."""
    return {
        "eds_config": {
            "path_config_source": {"path": str(path), "watched_directory": {"path": str(path.parent)}},
            "resource_api_version": "V3",
        }
    }


class LocalEndpoints:
    """The EDS file of one cluster: each member's (address, port) and its EndpointSlice conditions."""

    def __init__(self, path: Path, *, cluster: str, members: list[tuple[str, int]]) -> None:
        self.path, self.cluster = path, cluster
        self.conditions: dict[tuple[str, int], Conditions] = dict.fromkeys(members, READY)
        self.version = 0
        self._lock = threading.Lock()  # replicas leaving at once (a scale-down to the floor) write in turn
        path.parent.mkdir(parents=True, exist_ok=True)
        self.write()

    def set(self, member: tuple[str, int], conditions: Conditions) -> None:
        with self._lock:
            self.conditions[member] = conditions
            self._write()

    def remove(self, member: tuple[str, int]) -> None:
        """The pod is gone: its endpoint leaves the slice."""
        with self._lock:
            del self.conditions[member]
            self._write()

    def assignment(self) -> dict[str, Any]:
        lb_endpoints = [
            {
                "endpoint": {"address": {"socket_address": {"address": address, "port_value": port}}},
                "health_status": health_status(conditions),
                "load_balancing_weight": 1,
            }
            for (address, port), conditions in self.conditions.items()
        ]
        return {"@type": ENDPOINT_TYPE, "cluster_name": self.cluster, "endpoints": [{"lb_endpoints": lb_endpoints}]}

    def write(self) -> None:
        with self._lock:
            self._write()

    def _write(self) -> None:
        """The new file renamed into place (Envoy sees one move, never a half-written file)."""
        self.version += 1
        response = {"version_info": str(self.version), "resources": [self.assignment()]}
        fd, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".eds-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(response, handle)
        os.replace(temporary, self.path)


def edge_host_statuses(admin_url: str, cluster: str) -> dict[tuple[str, int], str]:
    """What the running Envoy holds for ``cluster``: each host's EDS health status (admin ``/clusters``)."""
    with urllib.request.urlopen(f"{admin_url}/clusters?format=json", timeout=5) as response:
        body = json.loads(response.read())
    out: dict[tuple[str, int], str] = {}
    for status in body.get("cluster_statuses", []):
        if status.get("name") != cluster:
            continue
        for host in status.get("host_statuses", []):
            socket = host["address"]["socket_address"]
            out[(socket["address"], int(socket["port_value"]))] = host.get("health_status", {}).get(
                "eds_health_status", "HEALTHY"
            )
    return out


def wait_for_edge(admin_url: str, cluster: str, member: tuple[str, int], status: str | None, timeout: float) -> float:
    """Seconds until the edge holds ``member`` with ``status`` (None: no longer holds it); TimeoutError after
    ``timeout``."""
    start = time.monotonic()
    while True:
        held = edge_host_statuses(admin_url, cluster)
        if held.get(member) == status if status is not None else member not in held:
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"the edge holds {member} as {held.get(member)!r}, not {status!r}, after {timeout:g} s")
        time.sleep(0.05)
