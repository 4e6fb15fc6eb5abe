"""The OpenAI server's key for Triton's restricted APIs (serving.auth): named by where it lives, refused in one
line when it is missing, and sent on every loopback call."""

from __future__ import annotations

import pytest

from inference_platform.inference_image.openai_api.__main__ import main
from inference_platform.inference_image.openai_api.llm_client import TritonLlm


@pytest.mark.parametrize(
    ("extra", "env", "message"),
    [
        (["--triton-key-header=x-api-key"], {}, "--triton-key-header needs --triton-key-file or --triton-key-env"),
        (["--triton-key-env=K"], {}, "need --triton-key-header"),
        (["--triton-key-header=x-api-key", "--triton-key-env=K"], {"K": " "}, "is empty (K)"),
        (["--triton-key-header=x-api-key", "--triton-key-file=/nonexistent/key"], {}, "cannot read --triton-key-file"),
    ],
)
def test_a_missing_key_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, extra, env, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code = main(["--model-dir", str(tmp_path), "--served-model-name", "m", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_the_key_goes_on_every_call_to_triton():
    llm = TritonLlm("http://127.0.0.1:1", "tensorrt_llm", api_key=("x-api-key", "secret-key-0123456789"))
    assert llm._client.headers["x-api-key"] == "secret-key-0123456789"
    assert "x-api-key" not in TritonLlm("http://127.0.0.1:1", "tensorrt_llm")._client.headers
