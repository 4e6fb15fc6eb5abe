"""Fixtures: an isolated AWS environment, a moto store (in-process or server) and model directories.

Every test runs with fake credentials and empty AWS config files, so nothing can reach real AWS:
requests go to ``mock_aws`` (in-process) or to a ``ThreadedMotoServer`` on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from moto import mock_aws
from moto.server import ThreadedMotoServer

from inference_platform.artifacts import ModelMetadata, TransferSettings
from inference_platform.artifacts.transfer import MIB

SMALL_TRANSFER = TransferSettings(part_size=5 * MIB, max_concurrency=4)
"""S3's smallest part size, so a 10 MiB + 1 KiB test file already goes up in three parts."""

METADATA = ModelMetadata(
    architecture="LlamaForCausalLM",
    precision="fp8",
    accelerator="nvidia-h100",
    builder="tensorrt-llm",
    builder_version="0.17.0",
    tensor_parallel_size=2,
)

_SERVER_STOP_SECONDS = 15
_names = itertools.count()


@pytest.fixture(autouse=True)
def _isolated_aws(aws_env: None) -> None:
    """Every artifacts test runs with fake credentials (tests/conftest.py ``aws_env``)."""


@pytest.fixture(autouse=True)
def no_backoff_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """botocore's backoff would sleep up to seconds per retry; record the delays instead."""
    from botocore.retries import standard

    delays: list[float] = []
    original = standard.ExponentialBackoff.delay_amount

    def record(self, context):
        delays.append(original(self, context))
        return 0

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", record)
    return delays


@pytest.fixture(scope="session")
def moto_server_url() -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access-log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    stopper = threading.Thread(target=server.stop, daemon=True)
    stopper.start()
    stopper.join(_SERVER_STOP_SECONDS)
    assert not stopper.is_alive(), f"moto server did not stop within {_SERVER_STOP_SECONDS} s"


@dataclass
class Store:
    """A bucket in one moto backend; ``session`` is what the code under test is given."""

    kind: str
    session: boto3.Session
    bucket: str

    @property
    def client(self):
        return self.session.client("s3")

    def uri(self, version: str = "1") -> str:
        return f"s3://{self.bucket}/models/llama/{version}/"

    def key(self, rel: str, version: str = "1") -> str:
        return f"models/llama/{version}/{rel}"


@pytest.fixture
def inprocess_store() -> Iterator[Store]:
    with mock_aws():
        session = boto3.Session()
        session.client("s3").create_bucket(Bucket="models")
        yield Store("inprocess", session, "models")


@pytest.fixture
def server_store(moto_server_url: str, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server_url)
    session = boto3.Session()
    bucket = f"models-{next(_names)}"
    session.client("s3").create_bucket(Bucket=bucket)
    return Store("server", session, bucket)


@pytest.fixture(params=["inprocess", pytest.param("server", marks=pytest.mark.motoserver)])
def store(request: pytest.FixtureRequest) -> Store:
    """The same test against ``mock_aws`` and against the HTTP server."""
    return request.getfixturevalue(f"{request.param}_store")


def model_files() -> dict[str, bytes]:
    """A small engine-like tree: one multipart shard, a single-part shard, json files, an empty file."""
    return {
        "engine/rank0.engine": os.urandom(10 * MIB + 1024),
        "engine/rank1.engine": os.urandom(MIB),
        "config.json": b'{"architecture": "LlamaForCausalLM"}',
        "tokenizer/tokenizer.json": b'{"model": {"type": "BPE"}}',
        "tokenizer/special_tokens_map.json": b"{}",
        "empty.txt": b"",
    }


@pytest.fixture
def make_model(tmp_path: Path) -> Callable[..., Path]:
    def make(files: dict[str, bytes] | None = None, name: str = "src") -> Path:
        root = tmp_path / name
        for rel, data in (files or model_files()).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        return root

    return make


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Faults:
    """Fails or watches chosen S3 requests of a session, before anything is sent.

    A rule answers matching requests with an S3 error (``times`` of them, or all) or raises an
    exception; every request is recorded as (operation, url, method).
    """

    def __init__(self, session: boto3.Session) -> None:
        self.calls: list[tuple[str, str]] = []
        self._rules: list[dict] = []
        self._lock = threading.Lock()
        # First in line: under mock_aws, moto's own before-send handler runs after ours.
        session.events.register_first("before-send.s3", self._before_send)

    def error(self, operation: str, status: int, code: str = "", *, times: int | None = None,
              key: str = "", headers: dict[str, str] | None = None, nth: int = 1) -> None:  # fmt: skip
        self._rules.append(dict(op=operation, key=key, status=status, code=code, left=times,
                                headers=headers or {}, nth=nth, seen=0, raise_=None))  # fmt: skip

    def raise_on(self, operation: str, exc: Exception, *, key: str = "", nth: int = 1) -> None:
        self._rules.append(dict(op=operation, key=key, left=1, nth=nth, seen=0, raise_=exc))

    def ops(self, operation: str, key: str = "") -> list[str]:
        return [url for op, url in self.calls if op == operation and key in url]

    def _before_send(self, request, event_name: str, **kwargs):
        operation = event_name.rsplit(".", 1)[-1]
        with self._lock:
            self.calls.append((operation, request.url))
            rule = self._match(operation, request.url)
        if rule is None:
            return None
        if rule["raise_"] is not None:
            raise rule["raise_"]
        body = b"" if request.method == "HEAD" or not rule["code"] else _error_xml(rule["code"])
        return AWSResponse(request.url, rule["status"], rule["headers"], _Raw(body))

    def _match(self, operation: str, url: str) -> dict | None:
        for rule in self._rules:
            if rule["op"] != operation or rule["key"] not in url or rule["left"] == 0:
                continue
            rule["seen"] += 1
            if rule["seen"] < rule["nth"]:
                continue
            if rule["left"] is not None:
                rule["left"] -= 1
            return rule
        return None


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **kwargs):
        yield self._body


def _error_xml(code: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
        f"<Message>injected {code}</Message><RequestId>test</RequestId></Error>"
    ).encode()


@pytest.fixture
def faults() -> Callable[[boto3.Session], Faults]:
    return Faults
