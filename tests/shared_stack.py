"""One local OpenAI stack per xdist worker, shared by the tests that only send it requests.

The real CPU Triton with the production ``tensorrt_llm`` model and the fast stand-in engine, the image's OpenAI
server and the real Envoy edge (tools/local_openai_stack.py), started once and stopped at the session's
end. Its users run one after another on one worker (the "openai-stack" xdist group, tests/conftest.py), so none
sees another's requests in flight. A test that stops, kills or drains its server, or needs other stand-in
delays, starts a stack of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

SHARED_TIMING_MS = {"first_token_delay_ms": 10, "token_delay_ms": 3}
"""Fast enough for loads of a few seconds, slow enough that streams are in flight while a test looks."""


@pytest.fixture(scope="session")
def shared_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
    from inference_platform.settings import stack_files
    from tools.local_openai_stack import openai_stack

    settings = stack_files.load("dev")
    with openai_stack(settings, tmp_path_factory.mktemp("shared-stack"), Timing(**SHARED_TIMING_MS)) as stack:
        yield stack
