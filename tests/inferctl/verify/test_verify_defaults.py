"""``inferctl verify --stack dev`` with its default flags against ``serve-local``'s OpenAI server (issue 17 §8).

The dev stack's own verification settings (ISL 512:128, OSL 128:32, a ramp to 16 in flight over 60 s,
10 % structured) against the image's OpenAI server in front of the real local Triton with the stand-in engine at
``serve-local``'s default delays. Word-sized prompts would exceed ``serving.maxInputLen`` in the stand-in's
byte-level tokenizer (and the chat template adds its own tokens), so verify sizes them by the server's own
``usage.prompt_tokens``. Only ``--url`` and ``--out`` are given, to keep the report out of the checkout.

Every count of the run agrees (issue 28: one run read 69, 55 and 98 requests): the last progress line, the counts
line, the chart's title, verify.json and requests.jsonl give the run's total; the errors check counts the requests of
the planned step, and says so, with the total beside it.
"""

from __future__ import annotations

import json
import re

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
    captured = capsys.readouterr()
    printed = captured.out
    report = json.loads((out / "verify.json").read_text())
    print(printed)
    assert report["prompt_sizing"]["source"] == "usage.prompt_tokens"
    assert report["prompt_sizing"]["max_input_tokens"] == 4096
    overall = report["load"]["overall"]
    assert overall["requests"] > 0 and overall["errors"] == 0, printed
    assert report["load"]["at_planned_concurrency"]["errors"] == 0
    assert code == 0 and "VERDICT: PASS" in printed, printed
    total = report["load"]["overall"]["requests"]
    by_step = {float(k): v["requests"] for k, v in report["load"]["by_load"].items()}
    planned = report["load"]["at_planned_concurrency"]["requests"]
    assert sum(by_step.values()) == total == len((out / "requests.jsonl").read_text().splitlines())
    assert planned == by_step[max(by_step)]
    (done,) = [line for line in captured.err.splitlines() if "done," in line]
    assert f"done, {total} requests recorded in all" in done
    steps = ", ".join(f"{n} at {load:g}" for load, n in sorted(by_step.items()))
    assert (
        f"load: {total} requests recorded ({steps} in flight); the checks judge the {planned} at the planned" in printed
    )
    errors = re.search(r"errors +(\d+) of (\d+) at the planned 16 in flight, of (\d+) in the run", printed)
    assert errors is not None and (int(errors[2]), int(errors[3])) == (planned, total), printed
