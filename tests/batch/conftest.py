"""The batch lane's local rig: moto's server for S3 and SQS on 127.0.0.1, the API and worker processes as the
image runs them (``python -m inference_platform.batch api|worker``), and a serving endpoint.

Bounded: every wait has a deadline, every process is stopped (SIGTERM, then SIGKILL) when its test ends.
The emulator runs in this process (ThreadedMotoServer): its data lives in moto's backends, so
:meth:`Moto.restart` stops the listening server and starts a new one on the same port with the data kept,
as an SQS/S3 outage looks to a client (connections refused, then the same queues and objects).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest

from inference_platform.processes import die_with_parent, free_port, stop_group

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
READY_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
REGION = "us-east-1"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": REGION}


class Moto:
    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        # werkzeug logs every request of moto's server: not the tests' business.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._factory = ThreadedMotoServer
        self.port = free_port()
        self.url = f"http://{LOOPBACK}:{self.port}"
        self._server = self._start()

    def _start(self) -> Any:
        server = self._factory(ip_address=LOOPBACK, port=self.port, verbose=False)
        server.start()
        return server

    def stop(self) -> None:
        self._server.stop()

    def start(self) -> None:
        self._server = self._start()

    def client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.url, region_name=REGION,
                            aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip


@pytest.fixture(scope="session")
def moto() -> Iterator[Moto]:
    server = Moto()
    yield server
    server.stop()


@dataclass
class Lane:
    """One test's bucket and queues, and the environment the lane's processes get."""

    moto: Moto
    work: Path
    bucket: str
    queue_url: str
    dlq_url: str
    env: dict[str, str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    python: str = sys.executable
    """The interpreter the roles run in: this one, or the batch image's environment (test_image.py)."""

    def start(self, role: str, name: str, **env: str) -> Process:
        metrics_port = free_port()
        full = {**self.env, "BATCH_METRICS_PORT": str(metrics_port), **env}
        log = self.work / f"{name}.log"
        handle = log.open("ab")
        popen = subprocess.Popen(
            [self.python, "-m", "inference_platform.batch", role],
            env=full, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.work,
            preexec_fn=die_with_parent(),
        )  # fmt: skip
        handle.close()
        self.processes.append(popen)
        process = Process(popen, log, f"http://{LOOPBACK}:{metrics_port}", full)
        process.wait_ready()
        return process

    def api(self, **env: str) -> Api:
        port = free_port()
        process = self.start("api", "api", BATCH_API_PORT=str(port), **env)
        return Api(process, f"http://{LOOPBACK}:{port}")

    def worker(self, name: str = "worker", **env: str) -> Process:
        return self.start("worker", name, **env)

    def stop_all(self) -> None:
        for popen in self.processes:
            stop_group(popen, STOP_TIMEOUT)

    def dlq_bodies(self) -> list[dict[str, Any]]:
        sqs = self.moto.client("sqs")
        found = []
        for _ in range(5):
            messages = sqs.receive_message(QueueUrl=self.dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=30).get(
                "Messages", []
            )
            found += [json.loads(m["Body"]) for m in messages]
            if not messages:
                break
        return found


@dataclass
class Process:
    popen: subprocess.Popen[bytes]
    log: Path
    metrics_url: str
    env: dict[str, str]

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise AssertionError(f"exited {self.popen.returncode} before ready:\n{self.log.read_text()[-3000:]}")
            with (
                contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError),
                urllib.request.urlopen(self.metrics_url + "/readyz", timeout=2) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.1)
        raise AssertionError(f"not ready within {timeout:.0f} s:\n{self.log.read_text()[-3000:]}")

    def metric(self, name: str, **labels: str) -> float:
        from prometheus_client.parser import text_string_to_metric_families

        with urllib.request.urlopen(self.metrics_url + "/metrics", timeout=5) as response:
            text = response.read().decode()
        return sum(
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        )

    def kill(self) -> None:
        os.killpg(self.popen.pid, signal.SIGKILL)
        self.popen.wait(timeout=STOP_TIMEOUT)

    def terminate(self) -> int:
        os.killpg(self.popen.pid, signal.SIGTERM)
        return self.popen.wait(timeout=STOP_TIMEOUT + 20)


@dataclass
class Api:
    process: Process
    url: str

    def openai(self, client: str = "team-a", **options: Any) -> Any:
        from openai import OpenAI

        return OpenAI(base_url=self.url + "/v1", api_key="unused-behind-the-edge",
                      default_headers={"x-client-id": client}, **options)  # fmt: skip


def make_lane(moto: Moto, work: Path, *, visibility: int = 30, max_receives: int = 3, **env: str) -> Lane:
    sqs = moto.client("sqs")
    s3 = moto.client("s3")
    suffix = uuid.uuid4().hex[:10]
    bucket = f"batch-{suffix}"
    s3.create_bucket(Bucket=bucket)
    dlq = sqs.create_queue(QueueName=f"batch-dlq-{suffix}", Attributes={"MessageRetentionPeriod": "1209600"})[
        "QueueUrl"
    ]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue = sqs.create_queue(
        QueueName=f"batch-{suffix}",
        Attributes={
            "VisibilityTimeout": str(visibility),
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receives)}),
        },
    )["QueueUrl"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    base.update(CREDENTIALS)
    base.update(
        AWS_ENDPOINT_URL_S3=moto.url,
        AWS_ENDPOINT_URL_SQS=moto.url,
        AWS_CONFIG_FILE=str(work / "aws-config"),
        AWS_SHARED_CREDENTIALS_FILE=str(work / "aws-credentials"),
        AWS_EC2_METADATA_DISABLED="true",
        BATCH_BUCKET=bucket,
        BATCH_QUEUE_URL=queue,
        BATCH_DLQ_URL=dlq,
        BATCH_REQUEST_TIMEOUT_SECONDS=str(max(1, visibility - 5)),
        BATCH_RECEIVE_WAIT_SECONDS="1",
        BATCH_MONITOR_INTERVAL_SECONDS="0.5",
        BATCH_RETRY_DELAY_SECONDS="0",
        PYTHONPATH=str(REPO),
    )
    base.update(env)
    return Lane(moto, work, bucket, queue, dlq, base)


@pytest.fixture
def lane_factory(moto: Moto, tmp_path: Path) -> Iterator[Any]:
    lanes: list[Lane] = []

    def make(**kwargs: Any) -> Lane:
        lane = make_lane(moto, tmp_path / f"lane{len(lanes)}", **kwargs)
        lane.work.mkdir(parents=True)
        lanes.append(lane)
        return lane

    yield make
    for lane in lanes:
        lane.stop_all()


@dataclass
class Serving:
    url: str
    popen: subprocess.Popen[bytes]


@contextlib.contextmanager
def stand_in_serving(
    work: Path, *, slots: int = 4, token_ms: float = 5, first_token_ms: float = 20
) -> Iterator[Serving]:
    port = free_port()
    log = (work / "serving.log").open("ab")
    popen = subprocess.Popen(
        [sys.executable, "-m", "tests.batch.openai_stand_in", "--port", str(port), "--slots", str(slots),
         "--token-ms", str(token_ms), "--first-token-ms", str(first_token_ms)],
        cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=die_with_parent(),
    )  # fmt: skip
    log.close()
    url = f"http://{LOOPBACK}:{port}"
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            with (
                contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError),
                urllib.request.urlopen(url + "/health", timeout=2),
            ):
                break
            if time.monotonic() > deadline or popen.poll() is not None:
                raise AssertionError(
                    f"the serving stand-in did not start: {(work / 'serving.log').read_text()[-2000:]}"
                )
            time.sleep(0.1)
        yield Serving(url, popen)
    finally:
        stop_group(popen, STOP_TIMEOUT)


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[Serving]:
    with stand_in_serving(tmp_path) as server:
        yield server


@contextlib.contextmanager
def lane_with_worker(lane_factory: Any, work: Path, *, slots: int, token_ms: float, concurrency: int,
                     **lane_options: Any) -> Iterator[tuple[Lane, Any, Process, Serving]]:  # fmt: skip
    """A serving stand-in, a lane with its API, one worker calling the stand-in, and an openai client of the API."""
    with stand_in_serving(work, slots=slots, token_ms=token_ms) as serving:
        lane = lane_factory(**lane_options)
        api = lane.api()
        worker = lane.worker(BATCH_SERVING_URL=serving.url, BATCH_CONCURRENCY=str(concurrency))
        yield lane, api.openai(max_retries=5), worker, serving
