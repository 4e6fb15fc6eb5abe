"""Removing one local replica the way a scale-down removes a pod (issue 31): nothing it admitted is lost.

The cluster's order, for a Deployment scaled down by KEDA/HPA (the night's scale-down to the floor is the same path):

1. the pod is deleted: its EndpointSlice endpoint turns ``terminating``, not ``ready`` (its server still
   ``serving``); Envoy Gateway v1.9.0 turns that into ``health_status: DRAINING`` in the cluster's EDS, so Envoy
   sends it no new request and lets the ones it holds run on (``endpoints.gateway_draining``);
2. the server keeps serving for the pod's ``preStop`` sleep (``inference.termination.preStopSeconds``), long enough
   for every proxy to have the endpoint draining;
3. SIGTERM to Triton and the OpenAI server at once (the pod's drain supervisor): the server stops accepting and its
   running streams finish, Triton keeps their requests until then, both within ``serving.server.exitTimeoutSeconds``;
4. the pod is gone, and its endpoint leaves the slice.

:func:`remove_replica` does exactly that to a replica of ``replicas.run_replicas`` behind the local edge, whose
inference cluster reads ``endpoints.LocalEndpoints``' EDS file: step 1 writes the conditions and waits until the
running Envoy holds the endpoint as DRAINING (its admin ``/clusters``), which must happen within the pre-stop time,
or the order the cluster relies on would not hold locally either.
"""

from __future__ import annotations

import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from inference_platform.catalog.edge_policy import INFERENCE_ROUTES
from inference_platform.inferctl.serving.endpoints import DRAINING, POD_DELETED, LocalEndpoints, wait_for_edge
from inference_platform.processes import signal_group


@dataclass(frozen=True)
class Removal:
    """How one replica left, in seconds from its deletion (step 1)."""

    edge_draining_s: float
    """Until the edge held the endpoint as DRAINING."""
    sigterm_s: float
    """When the server got SIGTERM (the pre-stop time)."""
    server_exit_s: float
    """When the OpenAI server had exited on its own, its streams finished."""
    server_exit_code: int
    exited_s: float
    """When every process of the replica had exited by itself (Triton, the server)."""
    endpoint_gone_s: float
    """When the edge no longer listed the endpoint."""


def remove_replica(
    replica: Any,
    endpoints: LocalEndpoints,
    *,
    admin_url: str,
    pre_stop_seconds: float,
    exit_timeout_seconds: float,
    cluster: str = INFERENCE_ROUTES,
) -> Removal:
    """Scale ``replica`` (a ``replicas.Replica``) down through the edge. Raises TimeoutError if the edge did not
    drain the endpoint within ``pre_stop_seconds``, RuntimeError if the server did not exit by itself within
    ``exit_timeout_seconds`` after SIGTERM (it is then stopped with SIGKILL, as the kubelet would at the end of the
    grace period)."""
    member = replica.endpoint
    start = time.monotonic()
    endpoints.set(member, POD_DELETED)
    draining = wait_for_edge(admin_url, cluster, member, DRAINING, timeout=pre_stop_seconds)
    time.sleep(max(0.0, pre_stop_seconds - (time.monotonic() - start)))
    sigterm = time.monotonic() - start
    # The pod's supervisor signals both drain-first processes at once, Triton and the OpenAI server (llmapi/launch.py,
    # inference_image/drain.py): Triton keeps its in-flight requests for its --exit-timeout-secs, the server its
    # streams for --shutdown-timeout; both are serving.server.exitTimeoutSeconds.
    for child in replica.processes:
        signal_group(child.process.pid, signal.SIGTERM)
    process: subprocess.Popen[bytes] = replica.processes[-1].process  # the OpenAI server, started last
    try:
        code = process.wait(timeout=exit_timeout_seconds + 5)  # uvicorn's own bound, plus its start and teardown
    except subprocess.TimeoutExpired:
        replica.stop()
        raise RuntimeError(
            f"replica {replica.index}'s OpenAI server still ran {exit_timeout_seconds:g} s after SIGTERM"
        ) from None
    server_exit = time.monotonic() - start
    for child in replica.processes[:-1]:
        try:
            child.process.wait(timeout=exit_timeout_seconds + 5)
        except subprocess.TimeoutExpired:
            replica.stop()
            raise RuntimeError(f"replica {replica.index}'s {child.name} still ran after its exit timeout") from None
    replica.stop()  # reaps every group (each process has exited by itself by now)
    exited = time.monotonic() - start
    endpoints.remove(member)
    wait_for_edge(admin_url, cluster, member, None, timeout=pre_stop_seconds)
    return Removal(
        edge_draining_s=draining,
        sigterm_s=sigterm,
        server_exit_s=server_exit,
        server_exit_code=code,
        exited_s=exited,
        endpoint_gone_s=time.monotonic() - start,
    )
