"""The application's routes and error shape, with Triton absent (the engine's side is tests/inferctl/serving/
test_openai_local.py): every answer, even for a path or method it does not serve, is OpenAI's error object."""

from __future__ import annotations

import socket

import pytest
from starlette.testclient import TestClient

from inference_platform.catalog.serving_contract import SERVED_MODEL_HEADER
from inference_platform.inference_image.openai_api.app import build_app
from inference_platform.inference_image.openai_api.llm_client import TritonLlm
from inference_platform.inference_image.openai_api.model_files import Prompting
from inference_platform.inference_image.openai_api.service import Limits, Service
from inference_platform.inference_image.testing.cpu_llm_api.checkpoint import write_checkpoint

MODEL = "Llama-3.1-8B"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    service = Service(
        served_model=MODEL,
        prompting=Prompting(write_checkpoint(tmp_path_factory.mktemp("ckpt"))),
        engine=TritonLlm(f"http://127.0.0.1:{closed}", "tensorrt_llm"),
        limits=Limits(max_input_len=64, max_seq_len=128),
        streaming_engine=True,
    )
    with TestClient(build_app(service), raise_server_exceptions=False) as c:
        yield c


def error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


def test_paths_and_methods_it_does_not_serve_get_openai_errors(client):
    assert error(client.get("/v2/health/ready"), 404)["type"] == "not_found_error"
    assert error(client.get("/v1/chat/completions"), 405)["type"] == "invalid_request_error"
    assert error(client.get(f"/v1/models/{MODEL}x"), 404)["code"] == "model_not_found"
    assert client.get(f"/v1/models/{MODEL}").json()["id"] == MODEL


def test_bodies_it_cannot_read_or_accept_are_400s_naming_the_field(client):
    assert "not valid JSON" in error(client.post("/v1/completions", content=b"{nope"), 400)["message"]
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "x" * 80}]}
    err = error(client.post("/v1/chat/completions", json=chat), 400)
    assert (err["code"], err["param"]) == ("context_length_exceeded", "messages")
    short = chat | {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 120}
    err = error(client.post("/v1/chat/completions", json=short), 400)
    assert (err["code"], err["param"]) == ("context_length_exceeded", "max_tokens")


def test_without_triton_it_answers_503_and_is_not_ready(client):
    err = error(client.post("/v1/completions", json={"model": MODEL, "prompt": "hi"}), 503)
    assert err["type"] == "service_unavailable" and "unreachable" in err["message"]
    assert error(client.get("/health"), 503)["type"] == "service_unavailable"
    stream = client.post("/v1/completions", json={"model": MODEL, "prompt": "hi", "stream": True})
    assert stream.status_code == 200 and '"error"' in stream.text and stream.text.endswith("data: [DONE]\n\n")


def test_a_fallback_server_answers_the_names_it_backs_up_as_itself(tmp_path):
    """``--answers-for`` (serving.fallbackFor, from models.fallbacks): a request naming the model this one backs up
    is admitted (it reaches the engine: here absent, so 503, not 404), another name is still 404, and every answer
    names the model that answered (``x-inference-served-model``)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    service = Service(
        served_model=MODEL,
        prompting=Prompting(write_checkpoint(tmp_path / "ckpt")),
        engine=TritonLlm(f"http://127.0.0.1:{closed}", "tensorrt_llm"),
        limits=Limits(max_input_len=64, max_seq_len=128),
        streaming_engine=True,
        answers_for=("Llama-3.1-70B",),
    )
    with TestClient(build_app(service), raise_server_exceptions=False) as fallback:
        backed_up = fallback.post("/v1/completions", json={"model": "Llama-3.1-70B", "prompt": "hi"})
        assert error(backed_up, 503)["type"] == "service_unavailable"
        assert backed_up.headers[SERVED_MODEL_HEADER] == MODEL
        other = fallback.post("/v1/completions", json={"model": "Mixtral-8x7B", "prompt": "hi"})
        assert error(other, 404)["code"] == "model_not_found" and other.headers[SERVED_MODEL_HEADER] == MODEL
