"""boto3 clients for both roles. Credentials and endpoints come from boto3's own chain (EKS Pod Identity in the
cluster; ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL_SQS`` point the local tests at moto)."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

from .config import CommonConfig
from .store import Store


def clients(config: CommonConfig, *, pool: int) -> tuple[Any, Any]:
    """(s3, sqs). Standard retry mode rides out throttling and a restarting endpoint (backoff up to 20 s)."""
    settings = Config(
        region_name=config.region,
        retries={"mode": "standard", "max_attempts": 8},
        max_pool_connections=pool,
        connect_timeout=5,
        read_timeout=30,
    )
    session = boto3.session.Session()
    return session.client("s3", config=settings), session.client("sqs", config=settings)


def store(s3: Any, config: CommonConfig) -> Store:
    return Store(
        s3,
        bucket=config.bucket,
        files_prefix=config.files_prefix,
        results_prefix=config.results_prefix,
        kms_key_id=config.sse_kms_key_id,
    )


def api_ready(s3: Any, sqs: Any, config: CommonConfig) -> None:
    """Raises unless the API's bucket prefix and the queue answer (readiness). A prefix listing, not HeadBucket:
    the API's role may list the bucket only under its prefixes (an s3:prefix condition HeadBucket never meets)."""
    s3.list_objects_v2(Bucket=config.bucket, Prefix=config.files_prefix, MaxKeys=1)
    sqs.get_queue_attributes(QueueUrl=config.queue_url, AttributeNames=["QueueArn"])


def worker_ready(sqs: Any, config: CommonConfig) -> None:
    """Raises unless the work queue answers (readiness). The worker's role may not list the bucket, so S3 trouble
    shows in batch_worker_errors_total{reason="s3"} instead of here."""
    sqs.get_queue_attributes(QueueUrl=config.queue_url, AttributeNames=["QueueArn"])
