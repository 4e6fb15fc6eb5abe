"""``inference-platform:batch``: the asynchronous lane (issue 22), the OpenAI Batch API beside the synchronous one.

Clients upload a JSONL file of requests and create a batch with a completion window; the Batch API service
stores the file in an encrypted S3 bucket and enqueues one message per line on an SQS queue; workers on the
system nodes take the messages, call the serving endpoint inside the cluster and write each line's result once.
KEDA scales the workers on the queue's depth, and the serving rollout holds its day floor at night while the
queue holds work (``backfill``), so the night's idle accelerators serve batch work instead of idling.

Off by default (a costly feature: it keeps accelerator nodes up at night while work is queued); the prod and
npu stacks turn it on. A stack without an image for the lane (``batch.image``) gets its AWS parts (bucket,
queues, roles) and no pods yet, as ``inference.image`` does for the rollout.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from inference_platform import catalog
from inference_platform.planners import placement
from inference_platform.settings.base import CheckContext, Problem, Section
from inference_platform.settings.inference import ImageSettings

# SQS limits (botocore sqs/2012-11-05 service-2.json, CreateQueue Attributes; tests/data/upstream pins them).
SQS_MAX_VISIBILITY_SECONDS = 43_200
SQS_MAX_RETENTION_SECONDS = 1_209_600
SQS_MAX_RECEIVE_COUNT = 1000
SQS_MIN_DATA_KEY_REUSE_SECONDS = 60
SQS_MAX_DATA_KEY_REUSE_SECONDS = 86_400
# OpenAI's Batch API limits (openai-python types/batch_create_params.py completion_window "24h"; OpenAI's batch
# guide: 50,000 requests and 200 MB per input file).
OPENAI_MAX_REQUESTS_PER_BATCH = 50_000
OPENAI_MAX_FILE_BYTES = 200 * 1000 * 1000
DEFAULT_COMPLETION_WINDOW_HOURS = 24
DEFAULT_REQUEST_TIMEOUT_SECONDS = 600
VISIBILITY_MARGIN_SECONDS = 60
"""Default visibility above the longest generation: the worker's read of the message, its result write."""
WORKER_VISIBILITY_MARGIN_SECONDS = 30
"""Room above the longest generation for the worker's result write and delete. (The lane's code refuses to start
below BATCH_REQUEST_TIMEOUT_SECONDS + 5; the settings ask for more.)"""
DEFAULT_MAX_RECEIVE_COUNT = 5
RETENTION_MARGIN_HOURS = 24
"""Work-queue messages live the completion window and a day more: a batch expires before its messages do."""
DEFAULT_RETENTION_DAYS = 30
"""OpenAI's default for batch files."""
UPLOAD_MEMORY_FACTOR = 2.5
UPLOAD_MEMORY_BASE_MIB = 128
"""The API holds an upload in memory while it checks and stores it: 2.5 x the largest file + 128 MiB (the lane's
code, h7's contract §1)."""
SQS_MAX_MESSAGE_BYTES = 262_144
"""One line per message; the API refuses a line beyond 256 KiB (h7's contract), the queue's MaximumMessageSize."""
DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024
SYSTEM_POOL = "system"
DEFAULT_IMAGE_REPOSITORY = "batch"
DEFAULT_LINES_PER_MESSAGE = 10
MAX_LINES_PER_MESSAGE = 100
"""The lane's code reads BATCH_LINES_PER_MESSAGE within 1..100 (batch/config.py)."""


class BatchImageSettings(ImageSettings):
    repository: str = DEFAULT_IMAGE_REPOSITORY
    """Default ``batch``. ECR repository of the lane's image (batch/Dockerfile), ``<project>-<stack>/batch``."""


class QuotaSettings(Section):
    queued_tokens: int = Field(default=20_000_000, ge=1)
    """Default 20,000,000. Tokens (prompt bytes / 4 + max_tokens of every line) a client may have queued over its
    open batches; beyond, 429 at submission."""
    queued_requests: int = Field(default=100_000, ge=1)
    """Default 100,000. Lines a client may have queued over its open batches; beyond, 429 at submission."""


class QuotasSettings(Section):
    default: QuotaSettings = Field(default_factory=QuotaSettings)
    """Every client's quota unless ``clients`` names it."""
    clients: dict[str, QuotaSettings] = Field(default_factory=dict)
    """Default none. Per edge client (``edge.auth.clients``) overrides."""


class WorkerSettings(Section):
    min_replicas: int = Field(default=0, ge=0, le=1000)
    """Default 0: no worker while the queue is empty (KEDA's activation)."""
    max_replicas: int = Field(default=4, ge=1, le=1000)
    """Default 4. KEDA's ceiling; with ``concurrency`` it bounds what batch work may put on the servers."""
    concurrency: int = Field(default=8, ge=1, le=1024)
    """Default 8. Requests one worker keeps in flight against the serving endpoint."""
    messages_per_worker: int | None = Field(default=None, ge=1, le=100_000)
    """Default ceil(concurrency / linesPerMessage). KEDA's ``queueLength``: queued + in-flight MESSAGES per worker
    replica (KEDA counts messages; a message carries up to linesPerMessage lines)."""
    cpu: float = Field(default=0.5, gt=0, le=16)
    """Default 0.5 vCPU (requests = limits)."""
    memory_gib: float = Field(default=1, gt=0, le=64)
    """Default 1 GiB."""
    node_pool: str = SYSTEM_POOL
    """Default ``system``, the only value allowed: workers never take accelerator capacity."""


class ApiSettings(Section):
    replicas: int = Field(default=2, ge=1, le=100)
    """Default 2. Batch API service replicas (production at least 2)."""
    cpu: float = Field(default=0.5, gt=0, le=16)
    """Default 0.5 vCPU."""
    memory_gib: float = Field(default=1, gt=0, le=64)
    """Default 1 GiB."""


class BackoffSettings(Section):
    waiting_per_replica: float = Field(default=2, gt=0)
    """Default 2. Waiting requests per serving replica above which workers stop taking new work: interactive
    traffic comes first."""
    kv_cache_ratio: float = Field(default=0.85, gt=0, le=1)
    """Default 0.85. KV-cache use per serving replica above which workers stop taking new work."""


class BackfillSettings(Section):
    hold_floor_at_night: bool = True
    """Default ``true``: while the queue holds work, the serving rollout keeps its day floor at night (KEDA's
    aws-sqs-queue trigger in its ScaledObject); it falls to the night floor only when the queue is empty."""
    tokens_per_day: float | None = Field(default=None, gt=0)
    """Default unset: the plan fills the night's free capacity. Batch tokens (input + output) a day the
    planner counts on; at most what the held floor can serve."""
    target_utilisation: float = Field(default=0.8, gt=0, le=1)
    """Default 0.8. Share of the held replicas' SLO capacity batch work may fill (the rest is headroom)."""


class BatchSettings(Section):
    key: ClassVar[str] = "batch"

    enabled: bool = False
    """Default ``false``. The Batch API (/v1/files, /v1/batches), its bucket, queues and workers."""
    image: BatchImageSettings = Field(default_factory=BatchImageSettings)
    """Default: repository ``batch``, no image yet (the AWS parts only)."""
    completion_window_hours: int = Field(default=DEFAULT_COMPLETION_WINDOW_HOURS, ge=1, le=312)
    """Default 24 (OpenAI's ``24h``). A batch not done by then expires; <= 312 so its messages fit SQS's 14 days."""
    request_timeout_seconds: int = Field(default=DEFAULT_REQUEST_TIMEOUT_SECONDS, ge=1, le=21_600)
    """Default 600. The longest one line's generation may take; the worker abandons it beyond."""
    visibility_timeout_seconds: int | None = Field(default=None, ge=1, le=SQS_MAX_VISIBILITY_SECONDS)
    """Default requestTimeoutSeconds + 60. A received message stays hidden this long; must exceed
    requestTimeoutSeconds, or a line still generating is handed to a second worker."""
    max_receive_count: int = Field(default=DEFAULT_MAX_RECEIVE_COUNT, ge=1, le=SQS_MAX_RECEIVE_COUNT)
    """Default 5. Deliveries before SQS moves a message to the dead-letter queue (its line to the error file)."""
    data_key_reuse_seconds: int = Field(
        default=300, ge=SQS_MIN_DATA_KEY_REUSE_SECONDS, le=SQS_MAX_DATA_KEY_REUSE_SECONDS
    )
    """Default 300 (SQS's). How long SQS reuses a data key of the CMK before calling KMS again."""
    retention_days: int = Field(default=DEFAULT_RETENTION_DAYS, ge=1, le=3650)
    """Default 30 (OpenAI's for batch files). Input, output and error files and batch records expire after this
    many days (the bucket's lifecycle)."""
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1024, le=OPENAI_MAX_FILE_BYTES)
    """Default 100 MiB; at most OpenAI's 200 MB. Largest input file the API accepts (413 beyond)."""
    lines_per_message: int = Field(default=DEFAULT_LINES_PER_MESSAGE, ge=1, le=MAX_LINES_PER_MESSAGE)
    """Default 10, 1..100. Consecutive input lines per SQS message (a tenth of the requests at 10); a line stays the
    unit of work, retry and result."""
    max_requests_per_batch: int = Field(default=OPENAI_MAX_REQUESTS_PER_BATCH, ge=1, le=OPENAI_MAX_REQUESTS_PER_BATCH)
    """Default 50,000 (OpenAI's limit). Lines of one input file."""
    quotas: QuotasSettings = Field(default_factory=QuotasSettings)
    workers: WorkerSettings = Field(default_factory=WorkerSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    backoff: BackoffSettings = Field(default_factory=BackoffSettings)
    backfill: BackfillSettings = Field(default_factory=BackfillSettings)

    @property
    def visibility_timeout(self) -> int:
        if self.visibility_timeout_seconds is not None:
            return self.visibility_timeout_seconds
        return self.request_timeout_seconds + VISIBILITY_MARGIN_SECONDS

    @property
    def queue_retention_seconds(self) -> int:
        return min(SQS_MAX_RETENTION_SECONDS, (self.completion_window_hours + RETENTION_MARGIN_HOURS) * 3600)

    @property
    def queue_length_target(self) -> int:
        """KEDA's ``queueLength``: messages one worker should hold (its concurrency in lines, in messages)."""
        if self.workers.messages_per_worker is not None:
            return self.workers.messages_per_worker
        return -(-self.workers.concurrency // self.lines_per_message)

    @property
    def has_image(self) -> bool:
        return self.image.tag is not None or self.image.digest is not None

    def problems(self, ctx: CheckContext) -> list[Problem]:
        if not self.enabled:
            return []
        out: list[Problem] = []
        needed = self.request_timeout_seconds + WORKER_VISIBILITY_MARGIN_SECONDS
        if self.visibility_timeout <= needed:
            out.append(
                Problem(
                    "batch.visibilityTimeoutSeconds",
                    f"got {self.visibility_timeout}; must exceed batch.requestTimeoutSeconds + "
                    f"{WORKER_VISIBILITY_MARGIN_SECONDS} ({needed}): a line still generating would be delivered to a "
                    "second worker before its result is written",
                )
            )
        needed_mib = UPLOAD_MEMORY_FACTOR * self.max_file_bytes / 2**20 + UPLOAD_MEMORY_BASE_MIB
        if self.api.memory_gib * 1024 < needed_mib:
            out.append(
                Problem(
                    "batch.api.memoryGib",
                    f"got {self.api.memory_gib:g}; an upload of batch.maxFileBytes ({self.max_file_bytes}) needs "
                    f"{needed_mib / 1024:.2f} GiB (2.5 x the file + 128 MiB while it is checked and stored)",
                )
            )
        if self.visibility_timeout * self.max_receive_count > self.queue_retention_seconds:
            out.append(
                Problem(
                    "batch.maxReceiveCount",
                    f"got {self.max_receive_count}; {self.max_receive_count} deliveries x "
                    f"{self.visibility_timeout} s visibility outlast the queue's retention "
                    f"({self.queue_retention_seconds} s = completionWindowHours + {RETENTION_MARGIN_HOURS} h): "
                    "a poison line would expire instead of reaching the error file",
                )
            )
        if self.workers.min_replicas > self.workers.max_replicas:
            out.append(
                Problem(
                    "batch.workers.minReplicas",
                    f"got {self.workers.min_replicas}; above batch.workers.maxReplicas ({self.workers.max_replicas})",
                )
            )
        if self.workers.node_pool != SYSTEM_POOL:
            pools = getattr(ctx.sections.get("nodePools"), "root", None) or {}
            why = (f"an accelerator pool (nodePools.{self.workers.node_pool}): batch workers never run on "
                   "accelerator nodes") if self.workers.node_pool in pools else "not a node pool"  # fmt: skip
            out.append(Problem("batch.workers.nodePool", f"got {self.workers.node_pool!r}, {why}; allowed: 'system'"))
        out += self._system_node_problems(ctx)
        if ctx.production and self.api.replicas < 2:
            out.append(Problem("batch.api.replicas", f"got {self.api.replicas}; production serves from at least 2"))
        if ctx.production and self.has_image and self.image.digest is None:
            out.append(
                Problem(
                    "batch.image.digest",
                    f"missing; production references the image by digest, not by tag ({self.image.tag})",
                )
            )
        out += self._edge_problems(ctx)
        out += self._scaling_problems(ctx)
        return out

    def _system_node_problems(self, ctx: CheckContext) -> list[Problem]:
        """The lane's pods run on the system node group: at their ceiling they must fit in it at its largest."""
        system = getattr(ctx.sections.get("cluster"), "system_node_group", None)
        if system is None or self.workers.node_pool != SYSTEM_POOL:
            return []
        known = [catalog.instance(t) for t in system.instance_types if t in catalog.CATALOG]
        if not known:
            return []
        out = self._system_memory_problems([t.name for t in known], system.max_size)
        vcpu = min(t.vcpu for t in known) * system.max_size
        wanted = self.workers.max_replicas * self.workers.cpu + self.api.replicas * self.api.cpu
        if wanted <= vcpu:
            return out
        return [
            *out,
            Problem(
                "batch.workers.maxReplicas",
                f"got {self.workers.max_replicas}; {self.workers.max_replicas} workers x {self.workers.cpu:g} vCPU and "
                f"{self.api.replicas} API replicas x {self.api.cpu:g} vCPU need {wanted:g} vCPU, more than the system "
                f"node group holds at cluster.systemNodeGroup.maxSize {system.max_size} ({vcpu:g} vCPU); raise it or "
                "lower the lane's ceiling",
            ),
        ]

    def _system_memory_problems(self, types: list[str], max_size: int) -> list[Problem]:
        """Memory, as the vCPU above (issue 28): each pod fits on one system node (a pod never spans two: it
        stays Pending), and the lane at its ceiling fits in the group at its largest; both against what the
        tightest type leaves to pods (planners/placement.py allocatable)."""
        node = placement.smallest(types)
        out = []
        for key, memory in (("batch.api.memoryGib", self.api.memory_gib),
                            ("batch.workers.memoryGib", self.workers.memory_gib)):  # fmt: skip
            if memory > node.memory_gib:
                out.append(
                    Problem(key, f"got {memory:g}; one pod needs {memory:g} GiB and a system node ({node.instance_type}) "
                            f"leaves {node.memory_gib:.1f} GiB to pods: it would stay Pending; allowed: at most "
                            f"{node.memory_gib:.1f}, or larger cluster.systemNodeGroup.instanceTypes")
                )  # fmt: skip
        if out:
            return out
        total = node.memory_gib * max_size
        wanted = self.workers.max_replicas * self.workers.memory_gib + self.api.replicas * self.api.memory_gib
        if wanted > total:
            out.append(
                Problem(
                    "batch.api.memoryGib",
                    f"got {self.api.memory_gib:g}; {self.api.replicas} API replicas x {self.api.memory_gib:g} GiB and "
                    f"{self.workers.max_replicas} workers x {self.workers.memory_gib:g} GiB need {wanted:g} GiB, more "
                    f"than the system node group leaves to pods at cluster.systemNodeGroup.maxSize {max_size} "
                    f"({total:.1f} GiB); raise it or lower the lane's memory",
                )
            )
        return out

    def _edge_problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        edge = ctx.sections.get("edge")
        auth = getattr(edge, "auth", None)
        clients = sorted(getattr(auth, "clients", {}) or {})
        for name in sorted(self.quotas.clients):
            if name not in clients:
                out.append(
                    Problem(f"batch.quotas.clients.{name}", f"not an edge client; expected one of edge.auth.clients: "
                            f"{clients}")
                )  # fmt: skip
        if edge is not None and getattr(edge, "domain", None) is not None and not getattr(auth, "enabled", True):
            # batch/api.py answers 401 without the client id the edge's key check sets (clientIdHeader): behind
            # an edge that checks no key, every Files and Batches call would fail.
            out.append(
                Problem(
                    "batch.enabled",
                    "true while edge.auth.enabled is false: the Batch API keeps each client's files and quotas by the "
                    "client id the edge's key check sets, so every call through this edge would be answered 401; "
                    "enable edge.auth or disable the lane",
                )
            )
        if ctx.known("edge") and edge is not None and getattr(edge, "domain", None) is None and ctx.production:
            out.append(
                Problem(
                    "batch.enabled",
                    "true while edge.domain is unset: production serves the Batch API only through the edge "
                    "(authenticated, rate-limited per client); set edge.domain",
                )
            )
        return out

    def _scaling_problems(self, ctx: CheckContext) -> list[Problem]:
        out = []
        autoscaling = ctx.sections.get("autoscaling")
        if ctx.known("autoscaling") and autoscaling is not None and not getattr(autoscaling, "enabled", True):
            out.append(
                Problem(
                    "batch.enabled",
                    "true while autoscaling.enabled is false: KEDA (installed with autoscaling) scales the batch "
                    "workers on the queue's depth; enable autoscaling or disable the lane",
                )
            )
        observability = ctx.sections.get("observability")
        if ctx.known("observability") and observability is not None and not getattr(observability, "enabled", True):
            out.append(
                Problem(
                    "batch.enabled",
                    "true while observability.enabled is false: the workers back off on the servers' queue and "
                    "KV-cache signals from this Prometheus",
                )
            )
        return out

    def planned_batch_tokens(self, free_tokens_per_day: float) -> float:
        """Batch tokens a day the plan counts on: the stack's figure, at most what the free capacity serves."""
        fill = free_tokens_per_day * self.backfill.target_utilisation
        if self.backfill.tokens_per_day is None:
            return fill
        return min(self.backfill.tokens_per_day, fill)
