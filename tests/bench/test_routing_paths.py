"""What counts as a routing change for the pull request's routing delta (bench/routing-paths.txt): every path named
still exists (a renamed file would silently drop out of the check), and the preview workflow reads that list, runs
the benchmark on head and base, and hands both reports to ``inferctl diff``."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PATHS = ROOT / "bench" / "routing-paths.txt"


def routing_paths() -> list[str]:
    lines = (line.strip() for line in PATHS.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_every_routing_path_exists():
    paths = routing_paths()
    assert paths and [p for p in paths if not (ROOT / p).exists()] == []
    assert len(set(paths)) == len(paths)


def test_the_benchmark_and_what_it_replays_are_routing_paths():
    paths = routing_paths()
    for needed in ("bench/routing.py", "bench/routing_trace.py", "bench/data/routing_trace.json"):
        assert needed in paths


def test_the_preview_workflow_runs_it_only_for_routing_changes_and_comments_the_delta():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text(encoding="utf-8"))
    steps = {step.get("name"): step for step in workflow["jobs"]["offline-plan"]["steps"]}
    assert "bench/routing-paths.txt" in steps["Does the change touch routing?"]["run"]
    bench = steps["Routing benchmark (head and base)"]
    assert bench["if"] == "steps.routing.outputs.touched != ''"
    assert "make bench BENCH_ARGS=routing" in bench["run"] and "make -C .base bench BENCH_ARGS=routing" in bench["run"]
    flags = steps["Render the comment"]["env"]["ROUTING"]
    assert (
        "--routing-head build/bench/routing.json" in flags and "--routing-base .base/build/bench/routing.json" in flags
    )
    assert "$ROUTING" in steps["Render the comment"]["run"]
