"""SIGTERM to the OpenAI server (what the pod's drain sends) lets a running stream finish, then the server exits 0;
a new connection is refused meanwhile."""

from __future__ import annotations

import signal
import time

import httpx
import openai
import pytest

from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.settings import stack_files
from tools.local_openai_stack import openai_stack

pytestmark = [pytest.mark.triton, pytest.mark.timeout(300)]


def test_a_stream_running_at_sigterm_finishes_and_the_server_exits_0(tmp_path):
    text = "drain me " * 60  # ~540 tokens at 4 ms: about 2 s still to come when the signal lands
    with openai_stack(stack_files.load("dev"), tmp_path, Timing(first_token_delay_ms=5, token_delay_ms=4),
                      edge=False) as stack:  # fmt: skip
        with openai.OpenAI(base_url=f"{stack.openai_url}/v1", api_key="unused", max_retries=0, timeout=60) as client:
            stream = client.chat.completions.create(
                model=stack.served_model,
                messages=[{"role": "user", "content": text}],
                stream=True,
                stream_options={"include_usage": True},
            )
            parts = []
            for chunk in stream:
                if chunk.choices:
                    parts.append(chunk.choices[0].delta.content or "")
                if len(parts) == 10:
                    stack.openai_server.process.send_signal(signal.SIGTERM)
                    time.sleep(0.3)
                    with pytest.raises(httpx.ConnectError):
                        httpx.get(f"{stack.openai_url}/v1/models", timeout=5)
            assert "".join(parts) == text.strip() and chunk.usage is not None
        assert stack.openai_server.process.wait(timeout=30) == 0
