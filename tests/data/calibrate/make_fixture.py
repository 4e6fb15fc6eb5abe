"""Regenerate verify-dev-local.json: a real ``inferctl verify`` run against the local CPU stand-in stack.

    .venv/bin/python tests/data/calibrate/make_fixture.py

Starts the local stack tests/inferctl/verify uses (openai_stack: Triton with the LLM-API model on the CPU
stand-in engine, the image's OpenAI server, the edge), runs ``inferctl verify --stack dev`` through the edge
with tests/inferctl/verify's SMALL_LOAD and generous SLOs, and copies <out>/verify.json here (the records path
inside it points at the temporary run).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from inference_platform.inferctl.cli import main as cli
from inference_platform.settings import stack_files
from tests.inferctl.verify.test_verify import FAST, stack_file, through_edge
from tools.local_openai_stack import openai_stack

HERE = Path(__file__).resolve().parent


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="calibrate-fixture-") as tmp:
        root = Path(tmp)
        with openai_stack(stack_files.load("dev"), root / "stack", FAST) as stack:
            out = root / "out"
            code = cli(["verify", "--stack", "dev", "--stack-file", str(stack_file(root)), *through_edge(stack, root),
                        "--workers", "2", "--log-file", str(stack.logs["openai"]), "--out", str(out)])  # fmt: skip
            if code != 0:
                print(f"inferctl verify exited {code}", file=sys.stderr)
                return code
            shutil.copy(out / "verify.json", HERE / "verify-dev-local.json")
            if (out / "latency.png").exists():
                shutil.copy(out / "latency.png", HERE.parents[2] / "build" / "verify-fixture-latency.png")
    print(f"wrote {HERE / 'verify-dev-local.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
