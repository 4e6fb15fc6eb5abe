"""The Batch API end to end as clients will use it: the official ``openai`` client's batch calls through the real
local Envoy edge (TLS, ``Authorization: Bearer <key>``, the route group of components/batch/edge_routes.py), the
Batch API and a worker on moto's S3 and SQS, and the worker's requests answered by the image's OpenAI server on
the real CPU Triton with the production ``tensorrt_llm`` model and the stand-in engine. Every batch answer is
checked against what the synchronous API returns through the same edge for the same request (same seed).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from inference_platform.components.batch.edge_routes import ROUTE_KEY, route_group
from inference_platform.inferctl.serving.edge_envoy import Upstream
from inference_platform.inferctl.serving.local_edge import generate_keys, run_edge
from inference_platform.processes import free_port
from inference_platform.settings import stack_files
from tests.batch.lane_requests import chat_line, file_lines, jsonl, wait_finished

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.motoserver, pytest.mark.timeout(600)]

LINES = 300
BAD = 150
LOOPBACK = "127.0.0.1"


@pytest.fixture(scope="module")
def settings():
    return stack_files.load("dev")


@pytest.fixture
def serving(shared_stack):
    return shared_stack  # the worker's one stack (tests/shared_stack.py); this test puts its own edge in front


def test_the_openai_clients_batch_calls_work_through_the_local_edge(settings, serving, lane_factory, tmp_path):
    lane = lane_factory()
    api = lane.api()
    worker = lane.worker("worker-1", BATCH_SERVING_URL=serving.openai_url, BATCH_CONCURRENCY="8")
    policy = dataclasses.replace(
        settings.edge.policy(max_input_tokens=settings.serving.max_input_len), extra_routes=(route_group(),)
    )
    keys = generate_keys(policy)
    owner, other = sorted(keys)[:2] if len(keys) > 1 else (sorted(keys)[0], None)
    openai_port = int(serving.openai_url.rsplit(":", 1)[1])
    api_port = int(api.url.rsplit(":", 1)[1])
    with run_edge(
        policy, keys=keys, upstream=Upstream(address=LOOPBACK, port=openai_port), work_dir=tmp_path / "edge",
        address=LOOPBACK, port=free_port(), admin_port=free_port(),
        extra_upstreams={ROUTE_KEY: Upstream(address=LOOPBACK, port=api_port)},
    ) as edge:  # fmt: skip
        http = openai.DefaultHttpxClient(verify=str(edge.certificates.ca))
        client = openai.OpenAI(
            base_url=f"{edge.url}/v1", api_key=keys[owner], http_client=http, max_retries=0, timeout=60
        )
        lines = [chat_line(i, model=serving.served_model, max_tokens=8, seed=1000 + i) for i in range(LINES)]
        # Greedy, so the synchronous re-ask below must give the same answer: TensorRT-LLM 1.2.1's sampler (and the
        # stand-in, issue 27) honours no per-request seed, so sampled answers need not repeat.
        for line in lines:
            line["body"].pop("temperature")
        # A request the server refuses (4xx): the error file at once, never retried.
        lines[BAD] = chat_line(BAD, model="no-such-model", max_tokens=8)
        uploaded = client.files.create(file=jsonl(lines), purpose="batch")
        assert uploaded.purpose == "batch" and uploaded.bytes > 0
        assert client.files.retrieve(uploaded.id).filename == "requests.jsonl"
        assert uploaded.id in [f.id for f in client.files.list(purpose="batch")]
        batch = client.batches.create(
            input_file_id=uploaded.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"job": "nightly"},
        )
        assert batch.status == "in_progress" and batch.metadata == {"job": "nightly"}
        assert [b.id for b in client.batches.list()] == [batch.id]
        done = wait_finished(client, batch.id, timeout=300)
        assert done.status == "completed", done
        counts = done.request_counts
        assert (counts.total, counts.completed, counts.failed) == (LINES, LINES - 1, 1)
        output = file_lines(client, done.output_file_id)
        errors = file_lines(client, done.error_file_id)
        assert [e["custom_id"] for e in errors] == [lines[BAD]["custom_id"]]
        assert errors[0]["response"]["status_code"] in (400, 404) and "error" in errors[0]["response"]["body"]
        assert worker.metric("batch_requests_total", status="retried") == 0
        assert worker.metric("batch_requests_total", status="failed") == 1
        good = [line for i, line in enumerate(lines) if i != BAD]
        assert [o["custom_id"] for o in output] == [line["custom_id"] for line in good]
        # Each answered line's exact usage, once, for the client that submitted the batch (issue 30's showback).
        for kind, key in (("prompt", "prompt_tokens"), ("completion", "completion_tokens")):
            reported = sum(o["response"]["body"]["usage"][key] for o in output)
            assert worker.metric("batch_tokens_total", client=owner, kind=kind) == reported > 0
        assert client.files.retrieve(done.output_file_id).purpose == "batch_output"
        # Every line asked again through the synchronous API, eight at a time (as the worker asked them).
        with ThreadPoolExecutor(8) as pool:
            syncs = list(pool.map(lambda line: client.chat.completions.create(**line["body"]), good))
        for line, out, sync in zip(good, output, syncs, strict=True):
            answer = out["response"]["body"]
            assert out["response"]["status_code"] == 200 and out["error"] is None
            assert answer["choices"][0]["message"]["content"] == sync.choices[0].message.content, line["custom_id"]
            assert answer["usage"]["completion_tokens"] == sync.usage.completion_tokens
        assert done.usage.output_tokens == sum(o["response"]["body"]["usage"]["completion_tokens"] for o in output)
        # Another client's key sees nothing of it: the edge sets the client id, the API keys objects by it.
        if other is not None:
            stranger = openai.OpenAI(base_url=f"{edge.url}/v1", api_key=keys[other], http_client=http, max_retries=0)
            with pytest.raises(openai.NotFoundError):
                stranger.batches.retrieve(batch.id)
            assert stranger.files.list().data == []
        # No key, no batch: the edge refuses before the API.
        anonymous = openai.OpenAI(base_url=f"{edge.url}/v1", api_key="x" * 48, http_client=http, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            anonymous.batches.list()
