"""``inference-platform:verification``: what ``inferctl verify`` loads a rollout with and what it must meet.

The latency SLOs themselves (TTFT p50/p95, ITL p50, per-request output rate) stay in ``serving.slo``;
this section adds what only a load test measures: ITL p95, goodput (the share of requests meeting both
per-request limits), the error rate, GPU utilisation, and the load's own size and bounds.
"""

from __future__ import annotations

import math
from typing import ClassVar

from pydantic import Field

from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.edge import EdgeSettings
from inference_platform.settings.inference import ImageSettings
from inference_platform.settings.serving import ServingSettings
from inference_platform.settings.types import HttpUrl, ShellWord

DEFAULT_DURATION_SECONDS = 60
DEFAULT_MAX_DURATION_SECONDS = 600
DEFAULT_MAX_REQUESTS = 2000
DEFAULT_JOB_DEADLINE_SECONDS = 1800
# Beyond the load itself: the pod's start, the smoke checks, the last requests' timeout, the log check.
JOB_OVERHEAD_SECONDS = 300


class SizeSettings(Section):
    mean: int = Field(ge=1)
    """Required. Mean tokens."""
    spread: int = Field(default=0, ge=0)
    """Default 0. Standard deviation in tokens (draws are clipped to mean + 3 x spread)."""


class VerificationSloSettings(Section):
    itl_p95_ms: float = Field(default=100, gt=0)
    """Default 100. 95th-percentile inter-token latency (per request: decode time / (tokens - 1))."""
    goodput_ttft_ms: float = Field(default=2000, gt=0)
    """Default 2000. A good request's own TTFT is at most this."""
    goodput_itl_ms: float = Field(default=100, gt=0)
    """Default 100. A good request's own inter-token latency is at most this."""
    min_goodput: float = Field(default=0.9, ge=0, le=1)
    """Default 0.9. Share of all requests (failed ones count as bad) that must be good."""
    max_error_rate: float = Field(default=0.01, ge=0, le=1)
    """Default 0.01. Share of requests allowed to fail."""
    min_gpu_utilization: float = Field(default=0.7, ge=0, le=1)
    """Default 0.7. Mean DCGM_FI_DEV_GPU_UTIL during the load (0-1); checked when Prometheus answers."""


class VerificationJobSettings(Section):
    """The in-cluster Job that runs ``inferctl verify`` after each rollout (``pulumi up`` waits for it)."""

    active_deadline_seconds: int = Field(default=DEFAULT_JOB_DEADLINE_SECONDS, ge=60, le=86400)
    """Default 1800. The Job is killed (and the deploy fails) after this long; must cover the load."""
    ttl_seconds_after_finished: int = Field(default=86400, ge=0, le=30 * 86400)
    """Default 86400. The finished Job and its logs are deleted after this long."""
    cpu: float = Field(default=2, gt=0, le=16)
    """Default 2. CPU of the verify container (requests = limits): the load generator and the smoke checks."""
    memory_gib: float = Field(default=4, gt=0, le=64)
    """Default 4. Memory of the verify container (requests = limits)."""


DEFAULT_IMAGE_REPOSITORY = "verification"


class VerificationImageSettings(ImageSettings):
    repository: str = DEFAULT_IMAGE_REPOSITORY
    """Default ``verification``. ECR repository of the verification image (inference_image/verification/Dockerfile),
    ``<project>-<stack>/verification``: the verification Job and the load test run it, never the serving image."""


class VerificationSettings(Section):
    key: ClassVar[str] = "verification"

    enabled: bool = False
    """Default ``false``. Run ``inferctl verify`` as a Job after each rollout (the deploy fails with it)."""
    image: VerificationImageSettings = Field(default_factory=VerificationImageSettings)
    """Default repository ``verification``, no tag. The image of the verification Job and of the load test's
    master and workers (``inferctl verify``/``loadtest`` on Python slim, ~0.5 GiB): they run on the system nodes,
    whose root volume the 40-50 GiB serving image does not fit. Without a tag or digest the stack creates the
    repository only (push the image, then set them)."""
    concurrency_per_replica: int | None = Field(default=None, ge=1)
    """Default: serving.maxBatchSize. Requests in flight per serving replica at the last load step."""
    duration_seconds: int = Field(default=DEFAULT_DURATION_SECONDS, ge=1)
    """Default 60. Seconds of load (split over the ramp steps up to the planned concurrency)."""
    max_duration_seconds: int = Field(default=DEFAULT_MAX_DURATION_SECONDS, ge=1)
    """Default 600. Ceiling on any verify run's --duration."""
    max_requests: int = Field(default=DEFAULT_MAX_REQUESTS, ge=1)
    """Default 2000. The load stops after this many requests even if time remains."""
    request_timeout_seconds: float = Field(default=60, gt=0, le=3600)
    """Default 60. A request without progress for this long counts as failed."""
    isl: SizeSettings = Field(default_factory=lambda: SizeSettings(mean=512, spread=128))
    """Default mean 512, spread 128. Prompt tokens."""
    osl: SizeSettings = Field(default_factory=lambda: SizeSettings(mean=128, spread=32))
    """Default mean 128, spread 32. Output tokens."""
    structured_share: float = Field(default=0.1, ge=0, le=1)
    """Default 0.1. Share of requests asking for schema-valid JSON (only when guided decoding is on)."""
    prometheus_url: HttpUrl | None = None
    """Default unset (no GPU check). Prometheus HTTP API base, e.g. http://prometheus.monitoring:9090."""
    slo: VerificationSloSettings = Field(default_factory=VerificationSloSettings)
    url: HttpUrl | None = None
    """Default ``https://<edge.domain>``, or without an edge the in-cluster Service (plain HTTP, refused in
    production). What the verification Job targets."""
    client: ShellWord | None = None
    """Default the first edge client (sorted). Whose API key the Job sends through the edge."""
    job: VerificationJobSettings = Field(default_factory=VerificationJobSettings)

    def problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        if self.duration_seconds > self.max_duration_seconds:
            out.append(
                Problem(
                    "verification.durationSeconds",
                    f"got {self.duration_seconds}; above maxDurationSeconds ({self.max_duration_seconds})",
                )
            )
        serving = ctx.sections.get("serving")
        max_input = getattr(serving, "max_input_len", None)
        if max_input is not None and self.isl.mean + 3 * self.isl.spread > max_input:
            out.append(
                Problem(
                    "verification.isl",
                    f"mean {self.isl.mean} + 3 x spread {self.isl.spread} exceeds serving.maxInputLen ({max_input})",
                )
            )
        max_seq = getattr(serving, "max_seq_len", None)
        longest = self.isl.mean + 3 * self.isl.spread + self.osl.mean + 3 * self.osl.spread
        if max_seq is not None and longest > max_seq:
            out.append(
                Problem(
                    "verification.osl",
                    f"the longest request is {longest} tokens (isl and osl mean + 3 x spread), beyond "
                    f"serving.maxSeqLen ({max_seq}): the server would refuse it or cut the output",
                )
            )
        if self.enabled:
            out += self._job_problems(ctx)
        if ctx.production and self.has_image and self.image.digest is None:
            out.append(
                Problem(
                    "verification.image.digest",
                    f"missing; production references the image by digest, not by tag ({self.image.tag})",
                )
            )
        return out

    @property
    def has_image(self) -> bool:
        """Whether ``image`` names an image (a tag or a digest): without one there is nothing to run yet."""
        return self.image.tag is not None or self.image.digest is not None

    def _job_problems(self, ctx: CheckContext) -> list[Problem]:
        from inference_platform.settings.load_test import edge_client, target_problems

        out = target_problems("verification", self.url, self.client, ctx)
        if (
            self.url is not None
            and self.url.startswith("http://")
            and not any(p.path == "verification.url" for p in out)
        ):
            # inference_platform.components.verification.VerificationJob: a Job given a url goes through the edge and sends its
            # client's API key, so it speaks TLS (only the default in-cluster target is plain HTTP).
            out.append(
                Problem("verification.url", f"got {self.url!r}; the Job sends its client's API key to it: https:// "
                        "(leave it unset for the in-cluster Service)")
            )  # fmt: skip
        needed = self.duration_seconds + 2 * self.request_timeout_seconds + JOB_OVERHEAD_SECONDS
        if self.job.active_deadline_seconds < needed:
            out.append(
                Problem(
                    "verification.job.activeDeadlineSeconds",
                    f"got {self.job.active_deadline_seconds}; the run needs up to {needed:g} s (durationSeconds + "
                    f"2 x requestTimeoutSeconds + {JOB_OVERHEAD_SECONDS})",
                )
            )
        edge, serving, inference = (ctx.sections.get(k) for k in ("edge", "serving", "inference"))
        out += self._limit_problems(ctx)
        client = edge_client(self.client, edge)
        clients = getattr(getattr(edge, "auth", None), "clients", {}) or {}
        if (
            self.url is None
            and isinstance(edge, EdgeSettings)
            and edge.domain
            and client is not None
            and client in clients
            and edge.auth.enabled
        ):
            tier = edge.rate_limits.tiers.get(edge.auth.clients[client].tier)
            batch = serving.max_batch_size if isinstance(serving, ServingSettings) else 1
            per_replica = self.concurrency_per_replica or batch
            total = per_replica * getattr(inference, "replicas", 1)
            if tier is not None and total > tier.concurrent_streams:
                out.append(
                    Problem(
                        "verification.concurrencyPerReplica",
                        f"{per_replica} x {getattr(inference, 'replicas', 1)} replicas = {total} in flight; client "
                        f"{client!r} may hold {tier.concurrent_streams} streams at the edge (edge.rateLimits.tiers."
                        f"{edge.auth.clients[client].tier}.concurrentStreams; the rest would be answered 429)",
                    )
                )
        return out

    def _limit_problems(self, ctx: CheckContext) -> list[Problem]:
        """Through the edge the Job meets its client's tier and the WAF's rules, like the load test
        (settings/load_test.py): a rate the edge refuses would fail every rollout with 429s or 403s.

        The Job's load is closed-loop: ``concurrencyPerReplica`` x replicas requests in flight, each taking
        about serving.slo ttftP50Ms + osl mean x itlP50Ms (a server meeting its SLO; a faster one sends more),
        never more than ``maxRequests`` in all."""
        edge, serving, inference = (ctx.sections.get(k) for k in ("edge", "serving", "inference"))
        if (
            self.url is not None
            or not isinstance(serving, ServingSettings)
            or not isinstance(edge, EdgeSettings)
            or edge.domain is None
        ):
            return []
        client = _edge_client(self.client, edge)
        per_replica = self.concurrency_per_replica or serving.max_batch_size
        in_flight = per_replica * getattr(inference, "replicas", 1)
        seconds = (serving.slo.ttft_p50_ms + self.osl.mean * serving.slo.itl_p50_ms) / 1000
        rate = in_flight / max(seconds, 1e-3)  # requests/s
        out = []
        auth = edge.auth
        if auth.enabled and client in auth.clients:
            tier_name = auth.clients[client].tier
            tier = edge.rate_limits.tiers.get(tier_name)
            per_minute = min(self.max_requests, math.ceil(rate * 60))
            if tier is not None and per_minute > tier.requests_per_minute:
                out.append(
                    Problem(
                        "verification.client",
                        f"{client!r} may send {tier.requests_per_minute} requests a minute (edge.rateLimits.tiers."
                        f"{tier_name}.requestsPerMinute); the "
                        f"verification Job sends about {per_minute} ({in_flight} in flight at ~{seconds:.1f} s each, "
                        "at the serving.slo medians): the edge would answer 429; give it a client of a tier sized "
                        "for it, or lower verification.concurrencyPerReplica / maxRequests",
                    )
                )
        waf = edge.waf
        network = ctx.sections.get("network")
        if waf.enabled:
            per_window = min(self.max_requests, math.ceil(rate * waf.window_seconds))
            nat = {"single": 1, "perAz": getattr(network, "az_count", 1)}.get(
                getattr(network, "nat_gateways", "single"), 1
            )
            if per_window > waf.ip_rate_limit * nat:
                out.append(
                    Problem(
                        "verification.maxRequests",
                        f"the verification Job sends about {per_window} requests per {waf.window_seconds} s from the "
                        f"cluster's {nat} NAT address(es); the WAF's per-IP rule (edge.waf.ipRateLimit "
                        f"{waf.ip_rate_limit}) would block it (403)",
                    )
                )
            if waf.api_key_rate_limit is not None and per_window > waf.api_key_rate_limit:
                out.append(
                    Problem(
                        "verification.maxRequests",
                        f"the verification Job sends about {per_window} requests per {waf.window_seconds} s with one "
                        f"API key; the WAF's per-key rule (edge.waf.apiKeyRateLimit {waf.api_key_rate_limit}) "
                        "would block it (403)",
                    )
                )
        return out


def _edge_client(section_client: str | None, edge: object) -> str | None:
    from inference_platform.settings.load_test import edge_client

    return edge_client(section_client, edge)
