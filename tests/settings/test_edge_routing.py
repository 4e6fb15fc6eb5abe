"""edge.routing (issue 29): the three modes, their defaults per environment, and one clear error per bad value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from inference_platform.catalog.edge_routing import ROUTING_MODES
from inference_platform.errors import CommandError
from inference_platform.settings import stack_files

ROOT = Path(__file__).resolve().parents[2]


def _with_routing(tmp_path: Path, routing: str) -> Path:
    text = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text(encoding="utf-8")
    anchor = "    hostedZoneName: example.com\n"
    assert anchor in text
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(text.replace(anchor, anchor + "    routing:\n" + routing, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(("stack", "mode"), [("dev", "envoy"), ("prod", "inference-pool"), ("npu", "inference-pool")])
def test_default_mode_per_stack(stack: str, mode: str) -> None:
    settings = stack_files.load(stack)
    policy_routing = settings.edge.routing.routing(settings.environment)
    assert policy_routing.mode == mode
    assert mode in policy_routing.describe()


@pytest.mark.parametrize("mode", ROUTING_MODES)
def test_each_mode_is_accepted(tmp_path: Path, mode: str) -> None:
    settings = stack_files.load("dev", stack_file=_with_routing(tmp_path, f"      mode: {mode}\n"))
    assert settings.edge.routing.routing(settings.environment).mode == mode


@pytest.mark.parametrize(
    ("routing", "key", "words"),
    [
        (
            "      mode: leastloaded\n",
            "edge.routing.mode",
            ("'leastloaded'", "'inference-pool'", "'envoy'", "'round-robin'"),
        ),
        ("      prefixTokens: 4\n", "edge.routing.prefixTokens", ("got 4", "16")),
        ("      loadBoundPercent: 99\n", "edge.routing.loadBoundPercent", ("got 99", "100")),
        ("      perTenant: maybe\n", "edge.routing.perTenant", ("maybe",)),
    ],
)
def test_bad_value_names_key_value_and_allowed(tmp_path: Path, routing: str, key: str, words: tuple[str, ...]) -> None:
    with pytest.raises(CommandError) as err:
        stack_files.load("dev", stack_file=_with_routing(tmp_path, routing))
    assert err.value.exit_code == 2
    (line,) = [line for line in str(err.value).splitlines() if line.strip().startswith(f"- {key}:")]
    for word in words:
        assert word in line


def test_cli_exits_2_with_one_clear_line(tmp_path: Path) -> None:
    bad = _with_routing(tmp_path, "      mode: leastloaded\n")
    done = subprocess.run(
        [sys.executable, "-m", "inference_platform.inferctl", "serve-local", "--stack-file", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "edge.routing.mode: got 'leastloaded'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("stack", "mode"), [("dev", "envoy"), ("prod", "inference-pool")])
def test_the_plan_shows_each_stacks_routing(stack_plan, stack: str, mode: str) -> None:
    from inference_platform.inferctl.plan.report import routing_line

    plan = stack_plan(stack)
    line = routing_line(plan)
    assert line is not None and line.startswith(f"Routing: {mode}:")
