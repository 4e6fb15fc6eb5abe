"""``inferctl verify --stack dev`` with its default flags against ``serve-local``'s OpenAI server (issue 17 §8).

The dev stack's own verification settings (ISL 512:128, OSL 128:32, a ramp to 16 in flight over 60 s,
10 % structured) against the image's OpenAI server in front of the real local Triton with the stand-in engine at
``serve-local``'s default delays. Word-sized prompts would exceed ``serving.maxInputLen`` in the stand-in's
byte-level tokenizer (and the chat template adds its own tokens), so verify sizes them by the server's own
``usage.prompt_tokens``. Only ``--url`` and ``--out`` are given, to keep the report out of the checkout.
"""

from __future__ import annotations

import json

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.inference_image.testing.cpu_llm_api.local import Timing
from inference_platform.settings import stack_files
from tools.local_openai_stack import openai_stack

pytestmark = [pytest.mark.triton, pytest.mark.timeout(420)]


def test_verify_with_default_flags_passes_with_no_errors(tmp_path, capsys):
    with openai_stack(stack_files.load("dev"), tmp_path / "openai", Timing(), edge=False) as server:
        out = tmp_path / "out"
        code = main(["verify", "--stack", "dev", "--url", server.openai_url, "--out", str(out)])
    printed = capsys.readouterr().out
    report = json.loads((out / "verify.json").read_text())
    print(printed)
    assert report["prompt_sizing"]["source"] == "usage.prompt_tokens"
    assert report["prompt_sizing"]["max_input_tokens"] == 4096
    overall = report["load"]["overall"]
    assert overall["requests"] > 0 and overall["errors"] == 0, printed
    assert report["load"]["at_planned_concurrency"]["errors"] == 0
    assert code == 0 and "VERDICT: PASS" in printed, printed
