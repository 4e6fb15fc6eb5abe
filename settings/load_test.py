"""``inference-platform:loadTest``: an optional distributed load test (Locust master + workers) in the cluster.

The workers offer Poisson arrivals at ``targetRate`` through the stack's edge for ``durationSeconds``, then
the master writes its report and exits (a Job; the workers are an Indexed Job that ends with it). Workers
run on the system node group only: accelerator nodes serve, they never generate load.
"""

from __future__ import annotations

import math
import urllib.parse
from typing import ClassVar

from pydantic import Field

from inference_platform import catalog
from inference_platform.catalog import load_generator
from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.edge import EdgeSettings
from inference_platform.settings.network import NetworkSettings
from inference_platform.settings.types import HttpUrl, ShellWord

DEFAULT_TARGET_RATE = 100.0
DEFAULT_DURATION_SECONDS = 300
DEFAULT_MAX_DURATION_SECONDS = 1800
DEFAULT_CONCURRENCY_PER_WORKER = 256
SYSTEM_POOL = "system"
RETIRED_PROTOCOLS = {
    "triton": ", which is retired: the edge serves only the OpenAI API, and Triton's generate endpoints with it "
    "are internal (issue 20)"
}
# A Poisson count over the duration exceeds rate x duration by a few standard deviations at most.
REQUEST_BUDGET_FACTOR = 1.2


class LoadTestSettings(Section):
    key: ClassVar[str] = "loadTest"

    enabled: bool = False
    """Default ``false``. Run the load test (master Job, worker Indexed Job) with every ``pulumi up``."""
    target_rate: float = Field(default=DEFAULT_TARGET_RATE, gt=0)
    """Default 100. Requests/s offered by all workers together (Poisson arrivals); > 0."""
    workers: int | None = Field(default=None, ge=1)
    """Default: sized from targetRate (targetRate / (perWorkerRate x utilization), rounded up). >= 1."""
    per_worker_rate: float = Field(default=load_generator.MEASURED_PER_WORKER_RPS, gt=0)
    """Default 701 (measured, catalog/load_generator.py). One worker's ceiling in requests/s."""
    utilization: float = Field(default=load_generator.DEFAULT_UTILIZATION, gt=0, le=1)
    """Default 0.7. Share of a worker's ceiling planned."""
    concurrency_per_worker: int = Field(default=DEFAULT_CONCURRENCY_PER_WORKER, ge=1)
    """Default 256. Requests in flight per worker at most; arrivals beyond it count as errors (saturated)."""
    duration_seconds: int = Field(default=DEFAULT_DURATION_SECONDS, ge=1)
    """Default 300. Seconds of arrivals; at most maxDurationSeconds."""
    max_duration_seconds: int = Field(default=DEFAULT_MAX_DURATION_SECONDS, ge=1)
    """Default 1800. Ceiling on durationSeconds."""
    max_requests: int | None = Field(default=None, ge=1)
    """Default 1.2 x targetRate x durationSeconds. The run stops after this many requests."""
    request_timeout_seconds: float = Field(default=60, gt=0, le=3600)
    """Default 60. A request without progress for this long counts as failed."""
    url: HttpUrl | None = None
    """Default ``https://<edge.domain>``. Where the load goes; production requires https."""
    client: ShellWord | None = None
    """Default the first edge client (sorted). Whose API key the workers send (its tier limits the rate)."""
    node_pool: str = SYSTEM_POOL
    """Default ``system``, the only value allowed: the system node group. Accelerator pools are refused."""
    protocol: str = "openai"
    """Default ``openai``, the only value: streamed chat completions (``triton`` is retired, issue 20: the
    edge serves the OpenAI API only)."""

    @property
    def planned_workers(self) -> int:
        if self.workers is not None:
            return self.workers
        return load_generator.workers_for(
            self.target_rate, per_worker_rps=self.per_worker_rate, utilization=self.utilization
        )

    @property
    def request_budget(self) -> int:
        if self.max_requests is not None:
            return self.max_requests
        return math.ceil(REQUEST_BUDGET_FACTOR * self.target_rate * self.duration_seconds)

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out: list[Problem] = []
        if self.protocol != "openai":
            why = RETIRED_PROTOCOLS.get(self.protocol, "")
            out.append(Problem("loadTest.protocol", f"got {self.protocol!r}{why}; allowed: 'openai'"))
        if not self.enabled:
            return out
        if self.duration_seconds > self.max_duration_seconds:
            out.append(
                Problem(
                    "loadTest.durationSeconds",
                    f"got {self.duration_seconds}; above maxDurationSeconds ({self.max_duration_seconds})",
                )
            )
        out += _pool_problems(self, ctx)
        if self.url is None and getattr(ctx.sections.get("edge"), "domain", None) is None and not ctx.production:
            # (production: target_problems says why the in-cluster Service is no target either)
            out.append(
                Problem("loadTest.url", "unset and edge.domain is unset: the load goes through the stack's edge; "
                        "set edge.domain or loadTest.url")
            )  # fmt: skip
        out += target_problems("loadTest", self.url, self.client, ctx)
        out += _rate_problems(self, ctx)
        return out


def target_problems(section: str, url: str | None, client: str | None, ctx: CheckContext) -> list[Problem]:
    """The load's URL (production only through TLS) and the edge client whose key it sends."""
    out = []
    edge = ctx.sections.get("edge")
    domain = getattr(edge, "domain", None)
    if url is not None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            out.append(Problem(f"{section}.url", f"got {url!r}; expected http(s)://host[:port]"))
        elif ctx.production and parsed.scheme != "https":
            out.append(Problem(f"{section}.url", f"got {url!r}; a production stack is tested through TLS: https://"))
    elif domain is None and ctx.production:
        out.append(
            Problem(
                f"{section}.url",
                "unset and edge.domain is unset: the only target would be the in-cluster Service over plain "
                "HTTP, which production refuses; set edge.domain or an https:// url",
            )
        )
    clients = sorted(getattr(getattr(edge, "auth", None), "clients", {}) or {})
    if client is not None and client not in clients:
        out.append(Problem(f"{section}.client", f"got {client!r}; expected one of edge.auth.clients: {clients}"))
    return out


def edge_client(section_client: str | None, ctx_edge: object) -> str | None:
    clients = sorted(getattr(getattr(ctx_edge, "auth", None), "clients", {}) or {})
    return section_client or (clients[0] if clients else None)


def _pool_problems(cfg: LoadTestSettings, ctx: CheckContext) -> list[Problem]:
    out = []
    pools = getattr(ctx.sections.get("nodePools"), "root", None) or {}
    if cfg.node_pool != SYSTEM_POOL:
        why = (
            f"an accelerator pool (nodePools.{cfg.node_pool}): load-test workers never run on accelerator nodes"
            if cfg.node_pool in pools
            else "not a node pool"
        )
        out.append(Problem("loadTest.nodePool", f"got {cfg.node_pool!r}, {why}; allowed: {SYSTEM_POOL!r}"))
        return out
    system = getattr(ctx.sections.get("cluster"), "system_node_group", None)
    if system is None:
        return out
    vcpu = min(catalog.instance(t).vcpu for t in system.instance_types if t in catalog.CATALOG)
    per_node = load_generator.workers_per_node(vcpu)
    needed = math.ceil(cfg.planned_workers / per_node)
    if needed > system.max_size:
        out.append(
            Problem(
                "loadTest.workers",
                f"{cfg.planned_workers} workers need {needed} system nodes ({per_node} per {vcpu}-vCPU node) "
                f"beside the add-ons; cluster.systemNodeGroup.maxSize is {system.max_size}: raise it or lower "
                "loadTest.targetRate",
            )
        )
    return out


def _rate_problems(cfg: LoadTestSettings, ctx: CheckContext) -> list[Problem]:
    out = []
    needed = load_generator.workers_for(cfg.target_rate, per_worker_rps=cfg.per_worker_rate, utilization=1.0)
    if cfg.workers is not None and cfg.workers < needed:
        out.append(
            Problem(
                "loadTest.workers",
                f"got {cfg.workers}; {cfg.target_rate:g} requests/s needs at least {needed} at "
                f"{cfg.per_worker_rate:g} per worker (perWorkerRate)",
            )
        )
    edge = ctx.sections.get("edge")
    if cfg.url is not None or not isinstance(edge, EdgeSettings) or edge.domain is None:
        return out
    # Through the edge the load meets the client's tier and the WAF's per-IP rule, from the NAT addresses.
    client = edge_client(cfg.client, edge)
    if client in edge.auth.clients and edge.auth.enabled:
        tier_name = edge.auth.clients[client].tier
        tier = edge.rate_limits.tiers.get(tier_name)
        if tier is not None and cfg.target_rate * 60 > tier.requests_per_minute:
            out.append(
                Problem(
                    "loadTest.targetRate",
                    f"got {cfg.target_rate:g} requests/s; client {client!r} may send {tier.requests_per_minute} a "
                    f"minute (edge.rateLimits.tiers.{tier_name}.requestsPerMinute, {tier.requests_per_minute / 60:g}/s): "
                    "the edge would "
                    "answer 429; give the load test a client of a tier sized for it (loadTest.client)",
                )
            )
    waf = getattr(edge, "waf", None)
    network = ctx.sections.get("network")
    if waf is not None and waf.enabled and isinstance(network, NetworkSettings):
        nat = {"single": 1, "perAz": network.az_count}.get(getattr(network, "nat_gateways", "single"), 1)
        allowed = waf.ip_rate_limit * nat / waf.window_seconds
        if cfg.target_rate > allowed:
            out.append(
                Problem(
                    "loadTest.targetRate",
                    f"got {cfg.target_rate:g} requests/s; the WAF's per-IP rule (edge.waf.ipRateLimit "
                    f"{waf.ip_rate_limit} per {waf.window_seconds} s) admits {allowed:g}/s from the cluster's "
                    f"{nat} NAT address(es)",
                )
            )
    return out
