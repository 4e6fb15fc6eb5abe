"""The production-rendered repository on the real local Triton (2.51) with the CPU stand-in.

- Multi-byte text streams whole through the ensemble and through BLS, over HTTP (SSE) and gRPC, with
  our own clients. The stand-in's tokenizer is byte-level with one token per UTF-8 byte, so every
  non-ASCII character below is split across tokens: the worst case a real BPE tokenizer produces.
- A production tensorrt_llm config with a missing or misspelt parameter does not load.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from inference_platform.inferctl.serving import local_triton
from inference_platform.inferctl.serving.serve_local import build_local_repository
from inference_platform.inferctl.serving.server_process import ServerProcess
from inference_platform.inferctl.serving.smoke_grpc import stream_generate
from inference_platform.inferctl.serving.smoke_http import HttpEndpoint, generate, generate_stream
from inference_platform.inference_image.server_args import rank0_args
from inference_platform.offline_plan import stack_settings

from inference_platform.errors import CommandError
from tests.inferctl.serving.conftest import FAST, LOOPBACK, READY_TIMEOUT, listen, start_stand_in_server

pytestmark = pytest.mark.triton

TEXT = "Grüße 東京 🚀"
ENTRY_POINTS = ("ensemble", "tensorrt_llm_bls")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with start_stand_in_server(stack_settings.load("dev").serving, tmp_path_factory.mktemp("multibyte")) as running:
        yield running


@pytest.fixture(scope="module")
def http(server) -> HttpEndpoint:
    return HttpEndpoint(server.http_url, {}, 30.0)


def test_the_text_is_split_across_tokens(tokenizer):
    ids = tokenizer.encode(TEXT, add_special_tokens=False)
    assert len(ids) == len(TEXT.encode("utf-8")) > len(TEXT)  # one token per byte
    assert tokenizer.decode(ids[2:3], skip_special_tokens=True) == "\ufffd"  # the first byte of "ü" alone


@pytest.mark.parametrize("text", [TEXT, "Ωμέγα → 日本語 😀👍🏽"])
@pytest.mark.parametrize("model", ENTRY_POINTS)
def test_multibyte_text_streams_whole_over_http(http, model, text):
    streamed, timing = generate_stream(http, model, {"text_input": text, "max_tokens": 96, "stream": True})
    whole = generate(http, model, {"text_input": text, "max_tokens": 96})["text_output"]
    assert "\ufffd" not in streamed
    assert streamed == whole == text
    assert len(timing.token_times) > 1  # it did stream, piece by piece


def test_multibyte_text_streams_whole_over_grpc_through_the_ensemble(server):
    streamed, timing = stream_generate(server.grpc_url, headers={}, prompt=TEXT, max_tokens=64, stream=True, timeout=30)
    assert streamed == TEXT and len(timing.token_times) > 1


def _broken_server(tmp_path: Path, edit) -> str:
    """Start the dev repository with ``edit`` applied to the production tensorrt_llm config; its log."""
    serving = stack_settings.load("dev").serving
    local = build_local_repository(serving, tmp_path, FAST)
    config = local.repository / "tensorrt_llm" / "config.pbtxt"
    config.write_text(edit(config.read_text()))
    triton = local_triton.prepare(tmp_path)
    ports = listen()
    flags = rank0_args(
        serving, model_repository=local.repository, models=local.models, listen=ports, backend_dir=triton.backend_dir
    )
    log = tmp_path / "server.log"
    server = ServerProcess(
        [str(triton.binary), *flags], env=triton.env, http_url=f"http://{LOOPBACK}:{ports.http_port}", log=log
    )
    with server, pytest.raises(CommandError, match=r"before it was ready|not ready"):
        server.wait_ready(READY_TIMEOUT)
    return log.read_text()


def test_a_misspelt_parameter_fails_the_load(tmp_path):
    log = _broken_server(tmp_path, lambda text: text.replace('key: "tokenizer_dir"', 'key: "tokenizer_dri"'))
    assert "unknown parameter 'tokenizer_dri'" in log and "missing parameter 'tokenizer_dir'" in log


def test_a_missing_parameter_fails_the_load(tmp_path):
    def drop_guided_backend(text: str) -> str:
        block = re.search(r'parameters: \{\n  key: "guided_decoding_backend"\n.*?\n\}\n', text, re.DOTALL)
        assert block is not None
        return text.replace(block.group(0), "")

    log = _broken_server(tmp_path, drop_guided_backend)
    assert "missing parameter 'guided_decoding_backend'" in log
