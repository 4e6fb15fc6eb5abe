"""The lane's rules under the real promtool: every rule parses, every alert fires on its bad case and stays quiet
on its good one; each alert has a runbook section; the dashboard's queries parse; the workers' back-off rules read
the serving workload's own series."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inference_platform.components.batch.signals import LaneWatch, rule_groups, shed_rules
from inference_platform.components.observability.dashboards import batch as batch_dashboard
from inference_platform.components.observability.dashboards.panels import expand, queries, to_json
from inference_platform.components.observability.promql import Scope
from tests.components.observability.test_rules import Case, _run, _tests
from tests.system_tools import require_tool

WATCH = LaneWatch(namespace="batch", completion_window_hours=24)
API = 'namespace="batch",pod="batch-api-a"'
WORKER = 'namespace="batch",pod="batch-worker-a"'


CASES = [
    Case(
        "BatchCompletionWindowAtRisk",
        # 19 h old with a 24 h window: beyond 75 % (18 h); an hour old is fine.
        [(f"batch_oldest_open_batch_age_seconds{{{API}}}", "68400+60x20")],
        [(f"batch_oldest_open_batch_age_seconds{{{API}}}", "3600+60x20")],
        "10m",
        {},
        "The oldest open batch is 19h 10m 0s old: beyond 75% of the 24 h completion window; when the window ends it "
        "expires unfinished.",
    ),
    Case(
        "BatchDeadLetters",
        [(f'batch_queue_messages{{{API},queue="dead_letter",state="visible"}}', "3x20")],
        [(f'batch_queue_messages{{{API},queue="dead_letter",state="visible"}}', "0x20")],
        "10m",
        {},
        "3 message(s) failed every delivery (maxReceiveCount) and sit in the dead-letter queue; their lines are in "
        "the batches' error files.",
    ),
    Case(
        "BatchWorkerErrors",
        [(f'batch_worker_errors_total{{{WORKER},reason="serving"}}', "0+30x40")],
        [(f'batch_worker_errors_total{{{WORKER},reason="serving"}}', "0+1x40")],
        "30m",
        {},
        "0.5 errors/s against S3, SQS, the serving endpoint or the back-off signals.",
    ),
    Case(
        "BatchQueueStalled",
        [
            (f'batch_queue_messages{{{API},queue="work",state="visible"}}', "500x60"),
            (f'batch_requests_total{{{WORKER},status="completed"}}', "100x60"),
        ],
        [
            (f'batch_queue_messages{{{API},queue="work",state="visible"}}', "500x60"),
            (f'batch_requests_total{{{WORKER},status="completed"}}', "100+10x60"),
        ],
        "50m",
        {},
        "Messages are queued but no line completed in 15 minutes: no worker runs, or every worker sheds because the "
        "interactive tier keeps the servers busy.",
    ),
]


@pytest.fixture(scope="module")
def promtool() -> Path:
    return require_tool("promtool")


def test_every_lane_alert_fires_and_stays_quiet_under_promtool(promtool, tmp_path):
    groups = rule_groups(WATCH)
    alerts = sorted(r["alert"] for g in groups for r in g["rules"] if "alert" in r)
    assert alerts == sorted(c.alert for c in CASES), "every alert needs a case"
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    checked = _run(promtool, "check", "rules", "rules.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    suite = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": _tests(groups, CASES)}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(suite, sort_keys=False))
    result = _run(promtool, "test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_window_alert_follows_the_stacks_completion_window():
    (_, alerts) = rule_groups(LaneWatch(namespace="batch", completion_window_hours=4, window_share=0.5))
    window = next(r for r in alerts["rules"] if r["alert"] == "BatchCompletionWindowAtRisk")
    assert window["expr"].endswith("> 7200")
    with pytest.raises(ValueError, match="window_share"):
        rule_groups(LaneWatch(namespace="batch", completion_window_hours=4, window_share=0))


def test_every_lane_alert_has_a_runbook_section(repo):
    anchors = {
        line.lstrip("# ").strip().lower()
        for line in (repo / "docs" / "runbooks.md").read_text().splitlines()
        if line.startswith("## ")
    }
    for group in rule_groups(WATCH):
        for rule in group["rules"]:
            if "alert" in rule:
                assert rule["annotations"]["runbook_url"] == f"docs/runbooks.md#{rule['alert'].lower()}"
                assert rule["alert"].lower() in anchors, f"docs/runbooks.md has no section for {rule['alert']}"


def test_the_dashboard_queries_parse_under_promtool(promtool, tmp_path):
    model = to_json(batch_dashboard.build("batch", 24))
    exprs = [expand(e, {"namespace": "batch"}) for e in queries(model)]
    assert len(exprs) >= 9
    groups = [{"name": "dashboard", "rules": [{"record": f"dashboard:q{i}", "expr": e} for i, e in enumerate(exprs)]}]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": groups}))
    checked = _run(promtool, "check", "rules", "rules.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_back_off_rules_read_the_serving_workloads_waiting_requests_and_kv_cache():
    rules = shed_rules(Scope(namespace="inference", job="triton"), waiting_per_replica=2, kv_cache_ratio=0.85)
    assert [r.above for r in rules] == [2, 0.85]
    assert 'namespace="inference"' in rules[0].expr and 'request_type="waiting"' in rules[0].expr
    neuron = shed_rules(Scope(namespace="inference", job="triton", backend="neuron"), waiting_per_replica=2,
                        kv_cache_ratio=0.85)  # fmt: skip
    assert len(neuron) == 1, "no KV-cache series on Neuron"
