"""Rules for the asynchronous lane's resources: SQS queues and the lane's workers and bucket.

- ``sqs-queues-encrypted``: every SQS queue is encrypted at rest (a KMS key or SSE-SQS); a queue of the batch lane
  (type ``inference:batch:*`` in its URN, or a queue that redrives to a dead-letter queue: it carries work) uses a
  customer-managed key, not SQS's own or ``alias/aws/sqs``.
- ``sqs-queues-tls-only``: every queue has a queue policy denying ``sqs:*`` to everyone without TLS
  (``aws:SecureTransport`` false), related by the policy's ``queueUrl`` property dependency.
- ``batch-queue-dead-letter``: the lane's work queue (a lane queue that is no queue's dead-letter target) redrives
  to a dead-letter queue of the stack, after at most ``maxReceiveCount`` deliveries (default 10), and that queue
  keeps messages at least as long as the work queue (a dead letter must not expire first).
- ``batch-visibility-covers-generation``: the batch workers' longest allowed generation
  (``BATCH_REQUEST_TIMEOUT_SECONDS`` in their Deployment) plus ``marginSeconds`` (default 30) fits within the
  visibility timeout of the queue they take work from (the queue their spec depends on): otherwise a line still
  generating is handed to a second worker.
- ``batch-workers-off-accelerators``: the Batch API and worker pods (``app.kubernetes.io/name`` batch-api,
  batch-worker) run on the system nodes, tolerate no accelerator taint and request no accelerator.
- ``batch-files-expire``: the lane's bucket has a lifecycle that expires objects (clients' files and results are
  transient; without one they are kept and paid for forever).

The lane's bucket is also judged by every S3 rule (storage.py): SSE-KMS, public access blocked, TLS only,
versioned, access-logged, protected in production.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    StackValidationArgs,
)

from inference_platform.policies.callbacks import ReportViolation, ResourceValidationPolicy, StackValidationPolicy
from inference_platform.policies.props import as_document, as_list, get, statements
from inference_platform.policies.rules.verification import report_off_accelerators
from inference_platform.policies.rules.workloads import POD_SPEC_PATHS

QUEUE = "aws:sqs/queue:Queue"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LIFECYCLE = "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration"
BUCKET = "aws:s3/bucket:Bucket"
AWS_MANAGED_SQS_KEY = "alias/aws/sqs"
LANE_TYPE = "inference:batch:"
LANE_APPS = ("batch-api", "batch-worker")
WORKER_APP = "batch-worker"
TIMEOUT_ENV = "BATCH_REQUEST_TIMEOUT_SECONDS"
DEFAULT_MAX_RECEIVE_COUNT = 10
DEFAULT_MARGIN_SECONDS = 30
SQS_DEFAULT_VISIBILITY_SECONDS = 30
"""What SQS applies without ``visibilityTimeoutSeconds`` (CreateQueue Attributes, botocore's model)."""
SQS_DEFAULT_RETENTION_SECONDS = 345_600


def in_lane(resource: Any) -> bool:
    """A resource of the batch lane: an ``inference:batch:`` component in its URN's type chain."""
    chain = str(getattr(resource, "urn", "")).split("::")
    return len(chain) > 2 and LANE_TYPE in chain[2]


def _redrive(props: Any) -> dict[str, Any] | None:
    return as_document(get(props, "redrivePolicy"))


def _encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != QUEUE:
        return
    key = get(args.props, "kmsMasterKeyId")
    managed = get(args.props, "sqsManagedSseEnabled") is True
    if not key and not managed:
        report(f"{args.name}: not encrypted at rest; set kms_master_key_id (a customer-managed key) or sqs_managed_sse")
        return
    carries_work = in_lane(args) or _redrive(args.props) is not None
    if carries_work and (not key or str(key).endswith(AWS_MANAGED_SQS_KEY)):
        how = "SSE-SQS (SQS's own key)" if not key else "the AWS-managed alias/aws/sqs"
        report(
            f"{args.name}: a work queue encrypted with {how}; use the stack's customer-managed key (kms_master_key_id), "
            "whose policy governs who may read the requests"
        )


def _queues(resources: Iterable[PolicyResource]) -> list[PolicyResource]:
    return [r for r in resources if r.resource_type == QUEUE]


def _denies_insecure_transport(document: Any) -> bool:
    for statement in statements(as_document(document)):
        principal = statement.get("Principal")
        everyone = principal == "*" or (isinstance(principal, dict) and "*" in as_list(principal.get("AWS")))
        actions = set(as_list(statement.get("Action")))
        secure = [get(statement, f"Condition.{op}.aws:SecureTransport") for op in ("Bool", "BoolIfExists")]
        if (
            statement.get("Effect") == "Deny"
            and everyone
            and actions & {"sqs:*", "*"}
            and any(str(v).lower() == "false" for v in secure if v is not None)
        ):
            return True
    return False


def _tls_only(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    guarded: set[str] = set()
    for policy in (r for r in resources if r.resource_type == QUEUE_POLICY):
        if _denies_insecure_transport(get(policy.props, "policy")):
            guarded.update(d.urn for d in policy.property_dependencies.get("queueUrl", []))
    for queue in _queues(resources):
        if queue.urn in guarded or _denies_insecure_transport(get(queue.props, "policy")):
            continue
        report(
            f"{queue.name}: no queue policy denies requests without TLS (Deny sqs:* to '*' when aws:SecureTransport "
            "is false)",
            queue.urn,
        )


def _dead_letter(args: StackValidationArgs, report: ReportViolation) -> None:
    limit = int(args.get_config().get("maxReceiveCount", DEFAULT_MAX_RECEIVE_COUNT))
    queues = _queues(args.resources)
    by_urn = {q.urn: q for q in queues}
    targets = {d.urn for q in queues for d in q.property_dependencies.get("redrivePolicy", []) if d.urn in by_urn}
    for queue in queues:
        if not in_lane(queue) or queue.urn in targets:
            continue
        redrive = _redrive(queue.props)
        dead = [by_urn[d.urn] for d in queue.property_dependencies.get("redrivePolicy", []) if d.urn in by_urn]
        if redrive is None or not dead:
            report(
                f"{queue.name}: the lane's work queue has no redrive policy to a dead-letter queue of the stack: a "
                "request that always fails would be delivered until it expires",
                queue.urn,
            )
            continue
        count = redrive.get("maxReceiveCount")
        if not isinstance(count, int | float) or not 1 <= count <= limit:
            report(f"{queue.name}: redrive maxReceiveCount is {count!r}; between 1 and {limit}", queue.urn)
        keeps = get(queue.props, "messageRetentionSeconds", SQS_DEFAULT_RETENTION_SECONDS)
        for target in dead:
            kept = get(target.props, "messageRetentionSeconds", SQS_DEFAULT_RETENTION_SECONDS)
            if kept < keeps:
                report(
                    f"{target.name}: the dead-letter queue keeps messages {kept:g} s, less than its work queue "
                    f"{queue.name} ({keeps:g} s): a dead letter would expire before anyone reads it",
                    target.urn,
                )


def _app(resource: PolicyResource) -> str | None:
    return (get(resource.props, "metadata.labels", {}) or {}).get("app.kubernetes.io/name")


def _visibility(args: StackValidationArgs, report: ReportViolation) -> None:
    margin = float(args.get_config().get("marginSeconds", DEFAULT_MARGIN_SECONDS))
    resources = list(args.resources)
    queues = {q.urn: q for q in _queues(resources)}
    for deployment in (r for r in resources if r.resource_type == DEPLOYMENT and _app(r) == WORKER_APP):
        pod = get(deployment.props, "spec.template.spec", {}) or {}
        env = {e.get("name"): e.get("value") for c in pod.get("containers") or [] for e in c.get("env") or []}
        try:
            timeout = float(env.get(TIMEOUT_ENV))  # type: ignore[arg-type]  # None: a TypeError, reported below
        except (TypeError, ValueError):
            report(f"{deployment.name}: the workers name no {TIMEOUT_ENV}: how long a line may take is unbounded",
                   deployment.urn)  # fmt: skip
            continue
        sources = [queues[d.urn] for d in deployment.property_dependencies.get("spec", []) if d.urn in queues]
        work = [q for q in sources if _redrive(q.props) is not None]
        if not work:
            report(f"{deployment.name}: the workers' spec depends on no work queue (a queue with a redrive policy)",
                   deployment.urn)  # fmt: skip
        for queue in work:
            visibility = get(queue.props, "visibilityTimeoutSeconds", SQS_DEFAULT_VISIBILITY_SECONDS)
            if visibility < timeout + margin:
                report(
                    f"{queue.name}: visibility timeout {visibility:g} s does not cover the workers' longest generation "
                    f"({TIMEOUT_ENV}={timeout:g}) plus {margin:g} s: a line still generating would be delivered to a "
                    "second worker",
                    queue.urn,
                )


def _off_accelerators(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in POD_SPEC_PATHS:
        return
    app = (get(args.props, "metadata.labels", {}) or {}).get("app.kubernetes.io/name")
    if app not in LANE_APPS:
        return
    path = POD_SPEC_PATHS[args.resource_type][0]
    report_off_accelerators(get(args.props, path, {}) or {}, app, report)


def _files_expire(args: StackValidationArgs, report: ReportViolation) -> None:
    resources = list(args.resources)
    expiring: set[str] = set()
    for lifecycle in (r for r in resources if r.resource_type == LIFECYCLE):
        rules = [r for r in as_list(get(lifecycle.props, "rules")) if get(r, "status") == "Enabled"]
        if any(get(r, "expiration.days") for r in rules):
            expiring.update(d.urn for d in lifecycle.property_dependencies.get("bucket", []))
    for bucket in (r for r in resources if r.resource_type == BUCKET and in_lane(r)):
        if bucket.urn not in expiring:
            report(
                f"{bucket.name}: the lane's bucket has no lifecycle rule expiring objects: clients' files and results "
                "would be kept (and billed) forever",
                bucket.urn,
            )


POLICIES = [
    ResourceValidationPolicy(
        name="sqs-queues-encrypted",
        description="SQS queues are encrypted at rest; queues that carry work use a customer-managed key.",
        validate=_encrypted,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="sqs-queues-tls-only",
        description="Every SQS queue's policy denies requests made without TLS.",
        validate=_tls_only,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="batch-queue-dead-letter",
        description="The batch lane's work queue redrives to a dead-letter queue of the stack after a bounded "
        "number of deliveries; the dead-letter queue keeps messages at least as long.",
        validate=_dead_letter,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"maxReceiveCount": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_RECEIVE_COUNT}}
        ),
    ),
    StackValidationPolicy(
        name="batch-visibility-covers-generation",
        description="The batch work queue's visibility timeout covers the workers' longest allowed generation.",
        validate=_visibility,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"marginSeconds": {"type": "number", "minimum": 0, "default": DEFAULT_MARGIN_SECONDS}}
        ),
    ),
    ResourceValidationPolicy(
        name="batch-workers-off-accelerators",
        description="The Batch API and worker pods run on the system nodes: no accelerator taint or resource.",
        validate=_off_accelerators,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
    StackValidationPolicy(
        name="batch-files-expire",
        description="The batch lane's bucket expires clients' files and results (a lifecycle with expiration).",
        validate=_files_expire,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
