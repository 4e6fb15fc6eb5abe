"""The OpenAI server's key for Triton's restricted APIs (serving.auth): named by where it lives, refused in one
line when it is missing, and sent on every loopback call."""

from __future__ import annotations

import pytest

from inference_platform.inference_image.openai_api.__main__ import main


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


# The key on the wire: tests/inference_image/openai_api/test_llm_client.py.
