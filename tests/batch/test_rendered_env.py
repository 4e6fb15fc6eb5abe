"""What the cluster side renders for the two roles (components/batch/pods.py: env, ports, probes, args) is what the
running code reads: the rendered environment parses with batch/config.py's own readers to the same values, and
the probes and ports are the ones the roles serve."""

from __future__ import annotations

import json

import pytest

from inference_platform.batch import config
from inference_platform.batch.__main__ import main
from inference_platform.components.batch import pods

LANE = pods.LaneEnv(
    region="eu-west-1", bucket="p-batch-1a2b", queue_url="https://sqs.eu-west-1.amazonaws.com/123456789012/p-batch",
    dead_letter_url="https://sqs.eu-west-1.amazonaws.com/123456789012/p-batch-dlq",
    kms_key_arn="arn:aws:kms:eu-west-1:123456789012:key/00000000-0000-0000-0000-000000000000",
    completion_window_hours=24, request_timeout_seconds=600, visibility_timeout_seconds=660, max_receive_count=5,
    max_file_bytes=100 * 1024 * 1024, max_requests=50000, max_output_tokens=2048, lines_per_message=10,
    client_id_header="x-client-id", quota_requests=1000, quota_tokens=2_000_000,
)  # fmt: skip


def as_environ(env: list[dict], tmp_path, **files: str) -> dict[str, str]:
    environ = {e["name"]: e["value"] for e in env}
    for name, content in files.items():
        path = tmp_path / name
        path.write_text(content)
        environ[name] = str(path)
    return environ


def test_the_rendered_api_environment_is_read_as_rendered(tmp_path):
    quotas = pods.quotas_document({"team-a": {"queuedTokens": 5, "queuedRequests": 6}})
    read = config.api_config(as_environ(pods.api_env(LANE), tmp_path, BATCH_QUOTAS_FILE=quotas))
    assert (read.port, read.common.metrics_port) == (pods.API_PORT, pods.METRICS_PORT)
    assert (read.common.bucket, read.common.queue_url, read.common.dlq_url) == (
        LANE.bucket,
        LANE.queue_url,
        LANE.dead_letter_url,
    )
    assert (read.common.expect_visibility_timeout, read.common.expect_max_receive_count) == (660, 5)
    assert (read.max_file_bytes, read.max_requests_per_batch, read.lines_per_message) == (
        LANE.max_file_bytes,
        50000,
        10,
    )
    assert read.common.sse_kms_key_id == LANE.kms_key_arn and read.client_id_header == "x-client-id"
    assert read.quota("team-a") == config.Quota(queued_requests=6, queued_tokens=5)
    assert read.default_quota == config.Quota(queued_requests=1000, queued_tokens=2_000_000)


def test_the_rendered_worker_environment_is_read_as_rendered(tmp_path):
    rules = (pods.ShedRule(expr='max(batch_waiting{ns="inference"})', above=4.0),)
    worker = pods.WorkerEnv(concurrency=8, prometheus_url="http://prometheus.monitoring.svc:9090", shed_rules=rules)
    env = pods.worker_env(LANE, worker, serving_url="http://inference.inference.svc.cluster.local:9000", key_file="k")
    read = config.worker_config(as_environ(env, tmp_path, BATCH_API_KEY_FILE="k" * 48))
    assert read.serving_url == "http://inference.inference.svc.cluster.local:9000" and read.api_key == "k" * 48
    assert read.shed_rules == (config.ShedRule(expr=rules[0].expr, above=4.0),)
    assert (read.concurrency, read.prometheus_url) == (8, "http://prometheus.monitoring.svc:9090")
    assert json.loads(next(e["value"] for e in env if e["name"] == "BATCH_SHED_RULES")) == [
        {"expr": rules[0].expr, "above": 4.0}
    ]


def test_the_rendered_containers_run_the_roles_the_image_has():
    for role in (pods.API, pods.WORKER):
        container = pods.container(role, "image", [], pods.Shape(cpu=0.25, memory_gib=0.5))
        (arg,) = container["args"]
        assert arg in ("api", "worker")
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
        assert {p["containerPort"] for p in container["ports"]} <= {
            config.DEFAULT_API_PORT,
            config.DEFAULT_METRICS_PORT,
        }
    with pytest.raises(SystemExit) as refused:
        main(["nope"])
    assert refused.value.code == 2  # argparse refuses any role but api and worker
