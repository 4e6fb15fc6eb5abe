"""The production repository (ensemble, pre/postprocessing, BLS) on the real Triton server, with the
CPU stand-in as the LLM step: generate over HTTP and gRPC, the NVIDIA client contract, refusals. (``inferctl
smoke`` speaks the OpenAI API now: tests/inferctl/serving/test_serve_local_edge.py runs it on the local stack.)"""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from inference_platform.inferctl.serving.smoke_grpc import stream_generate
from inference_platform.inferctl.serving.smoke_http import HttpEndpoint, SmokeFailure, generate, generate_stream
from inference_platform.offline_plan import stack_settings

from tests.inferctl.serving.conftest import start_stand_in_server

pytestmark = pytest.mark.triton

MODELS = ["ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls"]
PROMPT = "Echo me, Triton."


@pytest.fixture
def http(stand_in_server) -> HttpEndpoint:
    return HttpEndpoint(stand_in_server.http_url, {}, 30.0)


def test_streamed_and_whole_outputs_are_the_same_echo(http, stand_in_server):
    body = {"text_input": PROMPT, "max_tokens": 64}
    whole = generate(http, "ensemble", {**body, "stream": False})["text_output"]
    streamed, timing = generate_stream(http, "ensemble", {**body, "stream": True})
    grpc_text, grpc_timing = stream_generate(
        stand_in_server.grpc_url, headers={}, prompt=PROMPT, max_tokens=64, stream=True, timeout=30
    )
    assert whole == streamed == grpc_text == PROMPT  # the echo stops at end_id after one pass
    assert timing.tokens == grpc_timing.tokens == len(PROMPT.encode())


def test_concurrent_streams_keep_their_tokens_in_order(http):
    prompts = [f"stream {i}: the quick brown fox" for i in range(6)]
    with ThreadPoolExecutor(len(prompts)) as pool:
        texts = list(
            pool.map(
                lambda p: generate_stream(http, "ensemble", {"text_input": p, "max_tokens": 64, "stream": True})[0],
                prompts,
            )
        )
    assert texts == prompts


def test_the_clients_sampling_and_stopping_inputs_are_honoured(http):
    body = {"text_input": "alpha beta gamma", "stream": False}
    assert generate(http, "ensemble", {**body, "max_tokens": 5})["text_output"] == "alpha"
    assert generate(http, "ensemble", {**body, "max_tokens": 64, "stop_words": ["beta"]})["text_output"] == "alpha beta"
    # like TensorRT-LLM, the token that would complete a bad word is never emitted
    banned = generate(http, "ensemble", {**body, "max_tokens": 64, "bad_words": ["beta"]})["text_output"]
    assert banned == "alpha bet gamma"
    with_prompt = generate(http, "ensemble", {**body, "max_tokens": 6, "exclude_input_in_output": False})
    assert with_prompt["text_output"] == "alpha beta gammaalpha "
    sampled = {
        **body,
        "max_tokens": 8,
        "temperature": 0.7,
        "top_k": 5,
        "top_p": 0.9,
        "seed": 1,
        "end_id": 257,
        "pad_id": 257,
    }
    assert generate(http, "ensemble", sampled)["text_output"] == "alpha be"
    outputs = generate(
        http, "ensemble", {**body, "max_tokens": 3, "return_log_probs": True, "return_perf_metrics": True}
    )
    assert outputs["output_log_probs"] == [0.0, 0.0, 0.0] and outputs["first_token_time_ns"] > 0


def test_bls_streams_whole_characters(http):
    text = "naïve café ✓"
    streamed, _ = generate_stream(http, "tensorrt_llm_bls", {"text_input": text, "max_tokens": 64, "stream": True})
    whole = generate(http, "tensorrt_llm_bls", {"text_input": text, "max_tokens": 64})["text_output"]
    assert streamed == whole == text


def test_structured_output_goes_through_both_entry_points(http):
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    for model in ("ensemble", "tensorrt_llm_bls"):
        answer = generate(
            http,
            model,
            {
                "text_input": "Paris",
                "max_tokens": 64,
                "guided_decoding_guide_type": "json_schema",
                "guided_decoding_guide": json.dumps(schema),
            },
        )["text_output"]
        assert json.loads(answer) == {"city": "Paris"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"text_input": "x" * 4097, "max_tokens": 4}, "maxInputLen is 4096"),
        ({"text_input": "x", "max_tokens": 8192}, "does not fit maxSeqLen 8192"),
        ({"text_input": "x", "max_tokens": 4, "beam_width": 2}, "max_beam_width 1"),
        ({"text_input": "x", "max_tokens": 4, "return_context_logits": True}, "no logits"),
        (
            {
                "text_input": "x",
                "max_tokens": 4,
                "guided_decoding_guide_type": "ebnf_grammar",
                "guided_decoding_guide": "r",
            },
            "ebnf",
        ),
    ],
)
def test_refusals_reach_the_client_as_errors(http, body, message):
    with pytest.raises(SmokeFailure, match=message):
        generate(http, "ensemble", body)


def test_metrics_count_requests_per_model(stand_in_server, http):
    generate(http, "ensemble", {"text_input": "count me", "max_tokens": 4})
    with urllib.request.urlopen(stand_in_server.metrics_url, timeout=10) as response:
        metrics = response.read().decode()
    for model in ("ensemble", "preprocessing", "tensorrt_llm", "postprocessing"):
        assert f'nv_inference_request_success{{model="{model}",version="1"}}' in metrics


@pytest.fixture(scope="module")
def unary_server(tmp_path_factory):
    """The dev repository with serving.streaming false: nothing decoupled, one response per request."""
    dev = stack_settings.load("dev").serving
    with start_stand_in_server(dev.model_copy(update={"streaming": False}), tmp_path_factory.mktemp("unary")) as server:
        yield server


def test_without_streaming_every_model_answers_once(unary_server):
    http = HttpEndpoint(unary_server.http_url, {}, 30.0)
    for model in ("ensemble", "tensorrt_llm_bls"):
        assert generate(http, model, {"text_input": PROMPT, "max_tokens": 64})["text_output"] == PROMPT
    with pytest.raises(SmokeFailure, match="decoupled transaction policy"):
        generate(http, "ensemble", {"text_input": PROMPT, "max_tokens": 8, "stream": True})
