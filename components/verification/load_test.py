"""A distributed load test in the cluster, as Locust's own distributed deployment.

- The master is a Job (one pod, ``inferctl loadtest run --role master``): it binds 5557, waits for the
  workers (``expect_workers_seconds``: their nodes may be new), runs for the duration, writes the report to
  its log and exits, which ends the test. ``pulumi up`` waits for it (a bounded run: ``activeDeadlineSeconds``
  covers the pods' start, the workers' check-in, the arrivals and the last requests' timeout), so a load
  test that records nothing fails the deploy.
- The workers are an Indexed Job (``completionMode: Indexed``): Kubernetes gives each pod its
  ``JOB_COMPLETION_INDEX``, which is the worker's share of the request budget and its seed. Each worker
  ends when the master quits; ``pulumi up`` does not wait on them (``skipAwait``): the master's completion
  is the test's outcome and a missing worker shows there.
- Image: the serving image (by digest), which carries ``inferctl`` and the Locust extras
  (inference_image/requirements-image.txt). The locustfile is ``loadgen/locustfile.py`` inside
  it: a ConfigMap copy could drift from the ``inferctl`` that reads its records, and a stock Locust image
  lacks the LLM-aware user's imports.
- Workers run on the system node group only (required node affinity to ``node-role: system``, no
  accelerator toleration or resource) with one vCPU each (one gevent loop, what was measured).
- A NetworkPolicy lets workers reach only DNS, the master's 5557 and TCP 443 outside the VPC (the edge's
  internet-facing ALB; its addresses change, so the rule is "public addresses", not a list); the master
  admits the workers on 5557 and reaches DNS only.
- The API key: one edge client's key, through the namespace's own SecretProviderClass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog.load_generator import LOAD_SECONDS_ANNOTATION, LOAD_TEST_WORKER_LABELS
from inference_platform.components.common.errors import raise_if
from inference_platform.components.serving.workload_namespace import WorkloadNamespace, WorkloadNamespaceArgs
from inference_platform.components.verification import pods
from inference_platform.components.verification.key_delivery import deliver_one_key
from inference_platform.components.verification.pods import PodShape
from inference_platform.components.verification.verification_job import REPLACE_UNREADY

DEFAULT_NAMESPACE = "loadtest"
SERVICE_ACCOUNT = "loadtest"
MASTER_PORT = 5557
MASTER_SERVICE = "loadtest-master"
# loadgen/runner.py: the master allows 20 s to stop beyond the run and its last requests.
MASTER_STOP_SECONDS = 20
START_ALLOWANCE_SECONDS = 600
DEFAULT_EXPECT_WORKERS_SECONDS = 600
"""How long the master waits for every worker: their nodes may be new and the serving image is large."""
PART_OF = {"app.kubernetes.io/part-of": "inference-platform", "app.kubernetes.io/name": "loadtest"}
MASTER_LABELS = {**PART_OF, "app.kubernetes.io/component": "master"}
# inferctl cost finds the workers' Job by these labels and prices their nodes for LOAD_SECONDS_ANNOTATION.
WORKER_LABELS = {**PART_OF, **LOAD_TEST_WORKER_LABELS}


@dataclass(frozen=True, kw_only=True)
class LoadTestArgs:
    """What a load test needs: the cluster's provider, the target, the load shape and where its pods run."""

    k8s_provider: pulumi.ProviderResource
    """Required. The cluster's Kubernetes provider."""
    cluster_name: pulumi.Input[str]
    """Required. The cluster resource's name (the Pod Identity association)."""
    image: pulumi.Input[str]
    """Required. An image with ``inferctl`` and Locust (the serving image, by digest)."""
    image_version: str
    """Required. What the image reference pins: part of the Jobs' names (a new image, a new run)."""
    url: str
    """Required. Where the load goes (the edge's https URL)."""
    model: str | None = None
    """Default none: the first model ``GET /v1/models`` lists. The OpenAI model id the requests name."""
    rate: float
    """Required, > 0. Requests/s of Poisson arrivals, all workers together."""
    workers: int
    """Required, >= 1. Worker pods (one vCPU each)."""
    concurrency_per_worker: int
    """Required, >= 1. In-flight cap per worker; arrivals beyond it count as errors (server saturated)."""
    duration_seconds: int
    """Required, >= 1. Seconds of arrivals."""
    max_requests: int
    """Required, >= 1. The run stops after this many requests."""
    request_timeout_seconds: float = 60
    """Default 60. A request without progress for this long counts as failed."""
    protocol: str = "openai"
    """Default ``openai``, the only protocol of ``inferctl loadtest`` (streamed chat completions)."""
    isl: tuple[int, int] = (512, 128)
    """Default (512, 128). Prompt tokens (mean, spread)."""
    osl: tuple[int, int] = (128, 32)
    """Default (128, 32). Output tokens (mean, spread)."""
    structured_share: float = 0.0
    """Default 0. Share of structured-output requests."""
    api_key_secret_arn: pulumi.Input[str] | None = None
    """Default none. The one secret holding the key the workers send."""
    kms_key_arn: pulumi.Input[str] | None = None
    """The key the secret is encrypted with (required with api_key_secret_arn)."""
    region: str = "us-east-1"
    """Default ``us-east-1``. The secret's region."""
    partition: str = "aws"
    """Default ``aws``."""
    vpc_cidrs: Sequence[str] = ()
    """Default none. The VPC's ranges: the workers' 443 egress excludes them (only the public edge)."""
    namespace: str = DEFAULT_NAMESPACE
    """Default ``loadtest``."""
    worker_shape: PodShape = field(default_factory=lambda: PodShape(cpu=1, memory_gib=2))
    """Default 1 vCPU, 2 GiB."""
    master_shape: PodShape = field(default_factory=lambda: PodShape(cpu=1, memory_gib=4, work_gib=4))
    """Default 1 vCPU, 4 GiB and 4 GiB scratch (the per-request records)."""
    ttl_seconds_after_finished: int = 86400
    """Default 86400."""
    expect_workers_seconds: int = DEFAULT_EXPECT_WORKERS_SECONDS
    """Default 600. The master gives up (and the run fails) when not every worker connected by then."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Default none. The rollout and the edge: the load starts once they exist."""


class LoadTest(pulumi.ComponentResource):
    """A distributed load test in the cluster, as Locust's own distributed deployment (master and worker Jobs)."""

    namespace: str
    master_job: str
    worker_job: str

    def __init__(self, name: str, args: LoadTestArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:verification:LoadTest", name, None, opts)
        self.namespace = args.namespace
        namespace = WorkloadNamespace(
            f"{name}-namespace",
            WorkloadNamespaceArgs(
                k8s_provider=args.k8s_provider, namespace=args.namespace, service_accounts=[SERVICE_ACCOUNT]
            ),
            opts=pulumi.ResourceOptions(parent=self),
        )
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=[namespace])
        waits: list[pulumi.Resource] = [namespace]
        key_class = None
        if args.api_key_secret_arn is not None:
            identity, delivery = deliver_one_key(
                self,
                name,
                k8s_provider=args.k8s_provider,
                cluster_name=args.cluster_name,
                namespace=args.namespace,
                service_account=SERVICE_ACCOUNT,
                partition=args.partition,
                secret_arn=args.api_key_secret_arn,
                kms_key_arn=args.kms_key_arn or "",
                region=args.region,
                description="Reads the one API key the load-test workers send",
                depends_on=[namespace],
            )
            key_class = delivery.class_name
            waits += [identity, delivery]
        service = k8s.core.v1.Service(
            f"{name}-master",
            metadata={"name": MASTER_SERVICE, "namespace": args.namespace, "labels": MASTER_LABELS},
            spec={
                "selector": MASTER_LABELS,
                "ports": [{"name": "locust", "port": MASTER_PORT, "targetPort": MASTER_PORT, "protocol": "TCP"}],
            },
            opts=k8s_opts,
        )
        waits += [service, *self._network_policies(name, args, k8s_opts)]
        digest = hashlib.sha256(
            json.dumps([args.image_version, _common_flags(args)], sort_keys=True).encode()
        ).hexdigest()[:10]
        self.master_job = f"loadtest-master-{digest}"
        self.worker_job = f"loadtest-workers-{digest}"
        deadline = active_deadline_seconds(args)
        job_opts: dict[str, Any] = {
            "parent": self,
            "provider": args.k8s_provider,
            "depends_on": [*args.depends_on, *waits],
        }
        k8s.batch.v1.Job(
            f"{name}-master-job",
            metadata={
                "name": self.master_job,
                "namespace": args.namespace,
                "labels": MASTER_LABELS,
                "annotations": {REPLACE_UNREADY: "true"},
            },
            spec={
                "backoffLimit": 0,
                "activeDeadlineSeconds": deadline,
                "ttlSecondsAfterFinished": args.ttl_seconds_after_finished,
                "template": {"metadata": {"labels": MASTER_LABELS}, "spec": _master_pod(args)},
            },
            opts=pulumi.ResourceOptions(
                **job_opts, custom_timeouts=pulumi.CustomTimeouts(create=f"{deadline + START_ALLOWANCE_SECONDS}s")
            ),
        )
        k8s.batch.v1.Job(
            f"{name}-worker-job",
            metadata={
                "name": self.worker_job,
                "namespace": args.namespace,
                "labels": WORKER_LABELS,
                "annotations": {"pulumi.com/skipAwait": "true", LOAD_SECONDS_ANNOTATION: str(args.duration_seconds)},
            },
            spec={
                "completionMode": "Indexed",
                "completions": args.workers,
                "parallelism": args.workers,
                "backoffLimit": 0,
                "activeDeadlineSeconds": deadline,
                "ttlSecondsAfterFinished": args.ttl_seconds_after_finished,
                "template": {"metadata": {"labels": WORKER_LABELS}, "spec": _worker_pod(args, key_class)},
            },
            opts=pulumi.ResourceOptions(**job_opts),
        )
        self.register_outputs(
            {"namespace": self.namespace, "master_job": self.master_job, "worker_job": self.worker_job}
        )

    def _network_policies(
        self, name: str, args: LoadTestArgs, k8s_opts: pulumi.ResourceOptions
    ) -> list[k8s.networking.v1.NetworkPolicy]:
        master_port = [{"protocol": "TCP", "port": MASTER_PORT}]
        workers = k8s.networking.v1.NetworkPolicy(
            f"{name}-workers",
            metadata={"name": "loadtest-workers", "namespace": args.namespace, "labels": WORKER_LABELS},
            spec={
                "podSelector": {"matchLabels": WORKER_LABELS},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [],
                "egress": [
                    pods.dns_egress(),
                    {"to": [{"podSelector": {"matchLabels": MASTER_LABELS}}], "ports": master_port},
                    pods.public_https_egress(list(args.vpc_cidrs)),
                ],
            },
            opts=k8s_opts,
        )
        master = k8s.networking.v1.NetworkPolicy(
            f"{name}-master",
            metadata={"name": "loadtest-master", "namespace": args.namespace, "labels": MASTER_LABELS},
            spec={
                "podSelector": {"matchLabels": MASTER_LABELS},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": WORKER_LABELS}}], "ports": master_port}],
                "egress": [pods.dns_egress()],
            },
            opts=k8s_opts,
        )
        return [workers, master]


def active_deadline_seconds(args: LoadTestArgs) -> int:
    """The pods' start, the wait for the workers, the arrivals, the last requests' timeout (twice: the run and
    the master's stop) and the master's own stop."""
    return int(
        START_ALLOWANCE_SECONDS
        + args.expect_workers_seconds
        + args.duration_seconds
        + 2 * args.request_timeout_seconds
        + MASTER_STOP_SECONDS
    )


def _common_flags(args: LoadTestArgs) -> list[str]:
    return [
        "--url", args.url,
        "--protocol", args.protocol,
        "--shape", "rate",
        "--rate", f"{args.rate:g}",
        "--concurrency", str(args.concurrency_per_worker),
        "--max-requests", str(args.max_requests),
        "--duration", str(args.duration_seconds),
        "--timeout", f"{args.request_timeout_seconds:g}",
        "--workers", str(args.workers),
        "--isl", f"{args.isl[0]}:{args.isl[1]}",
        "--osl", f"{args.osl[0]}:{args.osl[1]}",
        "--structured-share", f"{args.structured_share:g}",
        "--master-port", str(MASTER_PORT),
        "--out", f"{pods.WORK_DIR}/loadtest",
        *(["--model", args.model] if args.model is not None else []),
    ]  # fmt: skip


def master_command(args: LoadTestArgs) -> list[str]:
    wait = ["--expect-workers-seconds", str(args.expect_workers_seconds)]
    return ["inferctl", "loadtest", "run", "--role", "master", "--master-host", "0.0.0.0", *wait, *_common_flags(args)]


def worker_command(args: LoadTestArgs, *, key_file: str | None) -> list[str]:
    host = f"{MASTER_SERVICE}.{args.namespace}.svc.cluster.local"
    command = ["inferctl", "loadtest", "run", "--role", "worker", "--master-host", host, *_common_flags(args)]
    return command + (["--api-key-file", key_file] if key_file else [])


def _master_pod(args: LoadTestArgs) -> dict[str, Any]:
    shape = args.master_shape
    ports = [{"name": "locust", "containerPort": MASTER_PORT, "protocol": "TCP"}]
    master = pods.container("master", args.image, master_command(args), shape, key_class=None, ports=ports)
    return pods.pod_spec(SERVICE_ACCOUNT, [master], shape, key_class=None)


def _worker_pod(args: LoadTestArgs, key_class: str | None) -> dict[str, Any]:
    shape = args.worker_shape
    key_file = f"{pods.SECRETS_DIR}/{pods.API_KEY_FILE}" if key_class else None
    worker = pods.container("worker", args.image, worker_command(args, key_file=key_file), shape, key_class=key_class)
    return pods.pod_spec(SERVICE_ACCOUNT, [worker], shape, key_class=key_class)


def _validate(args: LoadTestArgs) -> None:
    problems = []
    if not args.rate > 0:
        problems.append(f"rate={args.rate}: > 0 requests/s")
    for label, value in (("workers", args.workers), ("concurrency_per_worker", args.concurrency_per_worker),
                         ("duration_seconds", args.duration_seconds), ("max_requests", args.max_requests)):  # fmt: skip
        if value < 1:
            problems.append(f"{label}={value}: >= 1")
    if not args.url.startswith(("http://", "https://")):
        problems.append(f"url={args.url!r}: http(s)://host[:port]")
    if args.api_key_secret_arn is not None and args.kms_key_arn is None:
        problems.append("kms_key_arn: required with api_key_secret_arn")
    raise_if("LoadTest", problems)
