"""``inferctl serve-local --edge --batch`` (``make serve-local BATCH=1``) as a user runs it, one command: moto's S3
and SQS, the Batch API and a worker behind the same edge as the synchronous API, and the official ``openai``
client's files and batches calls against the base URL it prints, trusting the CA it prints (issue 28: running the
Batch API locally took eight environment variables copied from a conftest).

Every process it started is gone after SIGTERM: found by the test run's marker, extended for this serve-local
(tests/run_processes.py), which the batch roles inherit.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import uuid
from pathlib import Path

import openai
import pytest

from inference_platform.processes import die_with_parent, free_port
from tests.batch.lane_requests import chat_line, file_lines, jsonl, wait_finished
from tests.inferctl.serving.conftest import listen, wait_for_line
from tests.inferctl.serving.test_serve_local_edge import _banner
from tests.run_processes import RUN_ENV, processes_of, wait_gone

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.motoserver, pytest.mark.timeout(600)]
INFERCTL = [sys.executable, "-m", "inference_platform.inferctl"]
LINES = 12


def test_one_command_serves_the_batch_api_behind_the_edge_to_the_openai_client(tmp_path):
    ports = listen()
    work, log = tmp_path / "work", tmp_path / "serve-local.log"
    argv = [
        *INFERCTL, "serve-local", "--edge", "--batch", f"--work-dir={work}", f"--edge-port={free_port()}",
        f"--edge-admin-port={free_port()}", f"--http-port={ports.http_port}", f"--grpc-port={ports.grpc_port}",
        f"--metrics-port={ports.metrics_port}", f"--openai-port={free_port()}", "--first-token-delay-ms=5",
        "--token-delay-ms=2",
    ]  # fmt: skip
    marker = f"{os.environ.get(RUN_ENV, 'serve-local-batch')}/{uuid.uuid4().hex[:8]}"
    with open(log, "wb") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, RUN_ENV: marker}, preexec_fn=die_with_parent())  # fmt: skip
    try:
        wait_for_line(process, log, "serve-local: the OpenAI API is ready", timeout=180)
        printed = _banner(log)
        base_url, model = printed["base URL"], printed["model"]
        key_file, ca = Path(printed["API keys"].split(" ")[0]), Path(printed["CA"].split(" ")[0])
        assert printed["batch"].startswith(f"{base_url}/files and {base_url}/batches")
        roles = [p.command for p in processes_of(marker)]
        assert sum("inference_platform.batch api" in c for c in roles) == 1, roles
        assert sum("inference_platform.batch worker" in c for c in roles) == 1, roles
        key = json.loads(key_file.read_text())["default"]
        client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=60,
                               http_client=openai.DefaultHttpxClient(verify=ssl.create_default_context(cafile=ca)))  # fmt: skip
        lines = [chat_line(i, model=model, max_tokens=6, seed=100 + i) for i in range(LINES)]
        # Greedy, so the synchronous re-ask below must give the same answer: TensorRT-LLM 1.2.1's sampler (and the
        # stand-in, issue 27) honours no per-request seed, so sampled answers need not repeat.
        for line in lines:
            line["body"]["temperature"] = 0
        uploaded = client.files.create(file=jsonl(lines), purpose="batch")
        assert client.files.retrieve(uploaded.id).filename == "requests.jsonl"
        assert uploaded.id in [f.id for f in client.files.list(purpose="batch")]
        batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                      completion_window="24h", metadata={"from": "serve-local"})  # fmt: skip
        assert [b.id for b in client.batches.list()] == [batch.id]
        done = wait_finished(client, batch.id, timeout=240)
        assert done.status == "completed" and done.metadata == {"from": "serve-local"}, done
        assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (
            LINES,
            LINES,
            0,
        )
        output = file_lines(client, done.output_file_id)
        assert [o["custom_id"] for o in output] == [line["custom_id"] for line in lines]
        # The same answer as the synchronous API gives through the same edge (greedy).
        sync = client.chat.completions.create(**lines[0]["body"])
        assert output[0]["response"]["body"]["choices"][0]["message"]["content"] == sync.choices[0].message.content
        # The edge's keys guard the batch routes as they guard the chat route.
        anonymous = openai.OpenAI(base_url=base_url, api_key="x" * 48, max_retries=0,
                                  http_client=openai.DefaultHttpxClient(verify=ssl.create_default_context(cafile=ca)))  # fmt: skip
        with pytest.raises(openai.AuthenticationError):
            anonymous.batches.list()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=90) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    assert wait_gone(marker, 30) == []
