"""Liveness that sees a dead or wedged model process, on the real local Triton (issue 27 section 3).

Triton's ``/v2/health/live`` answers 200 after the ``tensorrt_llm`` model's process (its Python backend stub) is
killed, and every generation then fails "Stub process ... is not healthy": nothing would restart the pod. The pod's
liveness probe calls the OpenAI server's ``/live`` instead (components/serving/pod.py), which pings the model's own
process (inference_image/liveness.py). Here, probing as the kubelet would (one GET per period, counting failures):

- a busy replica (more requests than its batch holds, streaming) stays live at every probe;
- a killed model process fails the next probe and every one after, well within the configured failure count, while
  Triton's own live stays 200;
- a stopped model process (SIGSTOP: wedged) fails the next probe too (Triton itself then gives up on the stub and
  exits, measured here: the probes after it cannot connect at all).
"""

from __future__ import annotations

import os
import signal
import threading
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from inference_platform.components.serving.pod import Probes
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.settings import stack_files
from tools.local_openai_stack import openai_stack

pytestmark = [pytest.mark.triton, pytest.mark.timeout(300)]
BUSY_STREAMS = 24  # the dev stack's batch holds 16: 8 wait


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def _model_process(work: Path) -> int:
    """The pid of the tensorrt_llm model's Python backend stub (the one process of this stack running model.py)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "triton_python_backend_stub" in cmdline and str(work) in cmdline:
            return int(entry.name)
    raise AssertionError("no model process found")


def test_liveness_fails_within_the_probes_for_a_dead_or_stopped_model_and_holds_for_a_busy_one(tmp_path):
    failures_allowed = Probes().liveness_failures
    with openai_stack(stack_files.load("dev"), tmp_path, Timing(first_token_delay_ms=5, token_delay_ms=15),
                      edge=False) as stack:  # fmt: skip
        live, triton_live = f"{stack.openai_url}/live", f"{stack.triton_url}/v2/health/live"
        errors: list[BaseException] = []

        def stream() -> None:
            try:
                with openai.OpenAI(base_url=f"{stack.openai_url}/v1", api_key="x", max_retries=0, timeout=120) as c:
                    for _ in c.completions.create(model=stack.served_model, prompt="busy " * 40, max_tokens=150,
                                                  stream=True):  # fmt: skip
                        pass
            except BaseException as err:  # reported below
                errors.append(err)

        threads = [threading.Thread(target=stream) for _ in range(BUSY_STREAMS)]
        for t in threads:
            t.start()
        busy_probes = []
        while any(t.is_alive() for t in threads):
            busy_probes.append(_status(live))
            state = stack.active()
            if state["waiting"]:
                busy_probes.append(_status(live))  # saturated: requests are queued behind a full batch
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        assert busy_probes and set(busy_probes) == {200}, busy_probes

        os.kill(_model_process(tmp_path), signal.SIGKILL)
        after = [_status(live) for _ in range(failures_allowed)]
        assert after[0] == 503 and set(after) == {503}, after  # the first probe after the kill fails, and all after
        assert _status(triton_live) == 200  # what the probe used to read: still "live"


def test_a_wedged_model_process_fails_the_next_liveness_probe(tmp_path):
    with openai_stack(stack_files.load("dev"), tmp_path, Timing(first_token_delay_ms=5, token_delay_ms=15),
                      edge=False) as stack:  # fmt: skip
        live = f"{stack.openai_url}/live"
        assert _status(live) == 200
        pid = _model_process(tmp_path)
        os.kill(pid, signal.SIGSTOP)
        try:
            assert _status(live) == 503
        finally:
            os.kill(pid, signal.SIGCONT)
