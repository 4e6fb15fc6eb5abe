"""Regenerate verify-dev-local.json: a real ``inferctl verify`` run against the local Triton stand-in.

    PYTHONPATH=. .venv/bin/python tests/data/calibrate/make_fixture.py

Starts the CPU stand-in Triton for the dev stack's serving settings (the fixture tests/inferctl/verify uses),
runs ``inferctl verify --stack dev`` against it with tests/inferctl/verify's SMALL_LOAD and generous SLOs,
and copies <out>/verify.json here (the records path inside it points at the temporary run).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from inferctl import stack_settings
from inferctl.cli import main as cli
from tests.inferctl.serving.conftest import start_stand_in_server
from tests.inferctl.verify.test_verify import stack_file

HERE = Path(__file__).resolve().parent


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="calibrate-fixture-") as tmp:
        root = Path(tmp)
        with start_stand_in_server(stack_settings.load("dev").serving, root / "triton") as server:
            out = root / "out"
            code = cli(["verify", "--stack", "dev", "--stack-file", str(stack_file(root)), "--url", server.http_url,
                        "--workers", "2", "--log-file", str(server.log), "--out", str(out)])  # fmt: skip
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
