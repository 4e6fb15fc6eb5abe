"""``serve-local --batch``: the asynchronous lane (the OpenAI Batch API, docs/batch.md) on this machine, behind the
same edge as the synchronous API.

- moto's server emulates S3 and SQS in this process, on 127.0.0.1 (``moto.server.ThreadedMotoServer``);
- the bucket, and the work queue with its dead-letter queue, are made as the stack's ``batch`` settings make them
  in AWS: the visibility timeout, the redrive after ``maxReceiveCount``, the retention (components/batch/queues.py);
- the lane's two roles run as the image runs them (``python -m inference_platform.batch api|worker``), with the
  environment components/batch renders for the cluster (``pods.api_env``, ``pods.worker_env``), from the same
  settings. What differs here, and why: the AWS endpoints are moto's, with throw-away credentials and no
  profile of the user's (nothing may reach a real account); no KMS key (moto's S3 stores the objects as they come);
  both roles listen on 127.0.0.1 on free ports; the worker calls the local OpenAI server (with Triton's key when
  the stack still has one) and sheds on the same rule as in the cluster, read from Triton's own ``/metrics`` for
  this one replica instead of PromQL against Prometheus (components/batch/signals.py ``shed_rules``);
- the edge routes ``/v1/files`` and ``/v1/batches`` to the API (components/batch/edge_routes.py), with the same
  keys and limits as ``/v1/chat/completions``.

The emulator's data lives in this process: a restart starts with no files or batches (the keys and CA stay).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.catalog.serving_contract import LOOPBACK
from inference_platform.inferctl.serving.server_process import ServerProcess
from inference_platform.processes import free_port

READY_TIMEOUT = 60.0
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "serve-local", "AWS_SECRET_ACCESS_KEY": "serve-local"}
REQUEST_METRICS = "nv_trt_llm_request_metrics"
"""The LLM-API model's request gauge on Triton's /metrics (the cluster's shed rule reads it through Prometheus)."""


@dataclass(frozen=True)
class LocalLane:
    api_url: str
    """The Batch API itself (the edge routes /v1/files and /v1/batches here)."""
    api_port: int
    moto_url: str
    """moto's server: S3 and SQS (``aws --endpoint-url``)."""
    bucket: str
    queue_url: str
    dead_letter_url: str
    logs: tuple[Path, ...]


@dataclass(frozen=True)
class ServingTarget:
    """What the worker calls: the local OpenAI server, and Triton's metrics it sheds on."""

    url: str
    metrics_url: str
    llm_model: str
    key_header: str | None = None
    key: str | None = None


@contextlib.contextmanager
def run_lane(settings: Any, work: Path, serving: ServingTarget) -> Iterator[LocalLane]:
    """The emulator, the bucket and queues, the API and one worker, ready, until the block ends."""
    from moto.server import ThreadedMotoServer

    # werkzeug logs every request moto's server answers: not serve-local's output.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    work.mkdir(parents=True, exist_ok=True)
    moto_port = free_port()
    moto = ThreadedMotoServer(ip_address=LOOPBACK, port=moto_port, verbose=False)
    moto.start()
    moto_url = f"http://{LOOPBACK}:{moto_port}"
    started: list[ServerProcess] = []
    try:
        region = settings.region.name
        base = _base_env(moto_url, work)
        names = _make_lane(settings.batch, base, region, prefix=settings.name_prefix)
        lane_env, worker_env = _environments(settings, serving, names, work)
        api_port, api_metrics, worker_metrics = free_port(), free_port(), free_port()
        api = _role("api", base | lane_env | {"BATCH_API_PORT": str(api_port), "BATCH_METRICS_PORT": str(api_metrics)},
                    api_metrics, work / "api.log")  # fmt: skip
        worker = _role("worker", base | worker_env | {"BATCH_METRICS_PORT": str(worker_metrics)}, worker_metrics,
                       work / "worker.log")  # fmt: skip
        for process in (api, worker):
            started.append(process.start())
            process.wait_ready(READY_TIMEOUT)
        yield LocalLane(
            api_url=f"http://{LOOPBACK}:{api_port}",
            api_port=api_port,
            moto_url=moto_url,
            bucket=names["bucket"],
            queue_url=names["queue"],
            dead_letter_url=names["dead_letter"],
            logs=(work / "api.log", work / "worker.log"),
        )
    finally:
        for process in reversed(started):
            process.stop()
        moto.stop()


def _make_lane(batch: Any, env: dict[str, str], region: str, *, prefix: str) -> dict[str, str]:
    """The bucket and queues, configured from the stack's batch settings as components/batch configures them."""
    from unittest import mock

    import boto3

    # The clients resolve their configuration when made: made in the roles' environment, not the user's.
    with mock.patch.dict(os.environ, env, clear=True):
        session = boto3.session.Session(region_name=region)
        s3 = session.client("s3")
        sqs = session.client("sqs")
    bucket = f"{prefix}-batch"
    location: dict[str, Any] = (
        {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
    )
    s3.create_bucket(Bucket=bucket, **location)
    from inference_platform.components.batch.queues import DEAD_LETTER_RETENTION_SECONDS

    dead_letter = sqs.create_queue(
        QueueName=f"{prefix}-batch-dlq",
        Attributes={"MessageRetentionPeriod": str(DEAD_LETTER_RETENTION_SECONDS)},
    )["QueueUrl"]
    dead_letter_arn = sqs.get_queue_attributes(QueueUrl=dead_letter, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    queue = sqs.create_queue(
        QueueName=f"{prefix}-batch",
        Attributes={
            "VisibilityTimeout": str(batch.visibility_timeout),
            "MessageRetentionPeriod": str(batch.queue_retention_seconds),
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": str(batch.max_receive_count)}
            ),
        },
    )["QueueUrl"]
    return {"bucket": bucket, "queue": queue, "dead_letter": dead_letter}


def _environments(
    settings: Any, serving: ServingTarget, names: Mapping[str, str], work: Path
) -> tuple[dict[str, str], dict[str, str]]:
    """The roles' environments as the cluster renders them (components/batch/pods.py), then what differs here."""
    from inference_platform.components.batch import pods

    batch = settings.batch
    lane = pods.LaneEnv(
        region=settings.region.name,
        bucket=names["bucket"],
        queue_url=names["queue"],
        dead_letter_url=names["dead_letter"],
        kms_key_arn="",
        completion_window_hours=batch.completion_window_hours,
        request_timeout_seconds=batch.request_timeout_seconds,
        visibility_timeout_seconds=batch.visibility_timeout,
        max_receive_count=batch.max_receive_count,
        max_file_bytes=batch.max_file_bytes,
        max_requests=batch.max_requests_per_batch,
        lines_per_message=batch.lines_per_message,
        client_id_header=settings.edge.auth.client_id_header,
        max_output_tokens=settings.serving.max_seq_len - settings.serving.max_input_len,
        quota_requests=batch.quotas.default.queued_requests,
        quota_tokens=batch.quotas.default.queued_tokens,
    )
    quotas = work / "quotas.json"
    quotas.write_text(
        pods.quotas_document(
            {
                c: {"queuedRequests": q.queued_requests, "queuedTokens": q.queued_tokens}
                for c, q in batch.quotas.clients.items()
            }
        )
    )
    key_file = None
    if serving.key is not None:
        key_file = work / "serving-key"
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(serving.key)
    # The cluster's rule on one replica, read from Triton's /metrics (no Prometheus here).
    rule = {
        "expr": f'{REQUEST_METRICS}{{model="{serving.llm_model}",request_type="waiting"}}',
        "above": batch.backoff.waiting_per_replica,
    }
    worker = pods.WorkerEnv(concurrency=batch.workers.concurrency, prometheus_url=None)
    local = {
        # No KMS here: an empty key id would be refused; moto stores the objects as they come.
        "BATCH_SSE_KMS_KEY_ID": None,
        "BATCH_API_ADDRESS": LOOPBACK,
        "BATCH_METRICS_ADDRESS": LOOPBACK,
    }
    api_env = _as_dict(pods.api_env(lane), local | {"BATCH_QUOTAS_FILE": str(quotas)})
    worker_env = _as_dict(
        pods.worker_env(lane, worker, serving_url=serving.url, key_file=str(key_file) if key_file else None),
        local
        | {
            "BATCH_SIGNALS_METRICS_URL": serving.metrics_url,
            "BATCH_SHED_RULES": json.dumps([rule]),
            **({"BATCH_API_KEY_HEADER": serving.key_header} if serving.key_header else {}),
        },
    )
    return api_env, worker_env


def _as_dict(env: list[dict[str, Any]], overrides: Mapping[str, str | None]) -> dict[str, str]:
    out = {e["name"]: str(e["value"]) for e in env}
    for name, value in overrides.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def _base_env(moto_url: str, work: Path) -> dict[str, str]:
    """This process's environment without any AWS setting of the user's (profiles, keys, endpoints, regions), with
    moto's endpoints and throw-away credentials: nothing the roles do may reach a real account."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(LOCAL_CREDENTIALS)
    env.update(
        AWS_ENDPOINT_URL_S3=moto_url,
        AWS_ENDPOINT_URL_SQS=moto_url,
        AWS_CONFIG_FILE=str(work / "no-aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(work / "no-aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    return env


def _role(role: str, env: dict[str, str], metrics_port: int, log: Path) -> ServerProcess:
    from inference_platform.components.batch.pods import READY_PATH

    return ServerProcess(
        [sys.executable, "-m", "inference_platform.batch", role],
        env=env,
        http_url=f"http://{LOOPBACK}:{metrics_port}",
        log=log,
        ready_path=READY_PATH,
        name="the Batch API" if role == "api" else "the batch worker",
    )
