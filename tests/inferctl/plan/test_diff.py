"""`inferctl diff` on real plans of two commits (tests/data/plan_diff): the dev plan at 69a8620 (base) and
at daed92d with head-dev-stack.yaml (NAT per zone, spot + on-demand, maxSize 4), each written by
`inferctl plan --stack dev` in a worktree of that commit. The rendered PR comment must equal
expected-comment.md (regenerate both with the commands in the test's docstring when plans change on
purpose)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from inference_platform.inferctl.cli import main
from inference_platform.inferctl.plan import diff

DATA = Path(__file__).resolve().parents[2] / "data" / "plan_diff"


@pytest.fixture
def plan_dirs(tmp_path):
    for side in ("base", "head"):
        (tmp_path / side).mkdir()
        shutil.copy(DATA / f"{side}-dev.json.gz", tmp_path / side / "dev.json.gz")
    return tmp_path / "base", tmp_path / "head"


def test_comment_of_two_real_plans_matches_the_recorded_one(plan_dirs, tmp_path):
    """Regenerate: inferctl diff --base <dir with base dev.json.gz> --head <dir with head dev.json.gz>
    --out tests/data/plan_diff/expected-comment.md"""
    base, head = plan_dirs
    out = tmp_path / "comment.md"
    assert main(["diff", "--base", str(base), "--head", str(head), "--out", str(out)]) == 0
    assert out.read_text() == (DATA / "expected-comment.md").read_text()


def test_comment_content(plan_dirs):
    base, head = plan_dirs
    d = diff.compare(
        "dev", diff.read_plan(base / "dev.json.gz", "--base"), diff.read_plan(head / "dev.json.gz", "--head")
    )
    assert {r["type"] for r in d.added} == {"aws:ec2/natGateway:NatGateway", "aws:ec2/eip:Eip"}
    assert not d.removed
    assert [v["policy"] for v in d.new_violations] == [
        "cost-dev-on-demand-accelerators",
        "cost-nat-per-zone-production-only",
    ]
    assert d.cost_head.monthly_expected > d.cost_base.monthly_expected
    text = diff.render([d])
    assert text.startswith(diff.MARKER) and "| `dev` | +2 ~2 -0 | ❌ 1 mandatory |" in text


def test_without_a_base_everything_is_added_and_bad_files_exit_2(plan_dirs, tmp_path, capsys):
    _, head = plan_dirs
    assert main(["diff", "--head", str(head), "--base", str(tmp_path / "nowhere")]) == 0
    assert "(no base)" in capsys.readouterr().out
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "dev.json").write_text("not json")
    assert main(["diff", "--head", str(tmp_path / "bad")]) == 2
    assert main(["diff", "--head", str(tmp_path / "empty-dir-that-is-missing")]) == 2


HOSTILE = "web`<img src=x onerror=alert(1)>`\n| injected | row |"


def _cells(row: str) -> int:
    """Cell separators GitHub sees in a table row (a backslash-escaped pipe is text)."""
    return len(re.findall(r"(?<!\\)\|", row))


def test_names_and_messages_are_text_not_markup():
    resource = {"urn": f"urn:pulumi:dev::p::aws:s3/bucket:Bucket::{HOSTILE}", "type": "aws:s3/bucket:Bucket",
                "name": HOSTILE}  # fmt: skip
    violation = {"level": "mandatory", "policy": "p_<b>", "urn": resource["urn"], "message": f"bad *{HOSTILE}* [x](y)"}
    d = diff.StackDiff(stack="dev", base_present=True, added=[], removed=[], changed=[(resource, ["inputs.a_b"])],
                       violations=[violation], new_violations=[violation], fixed_violations=[], policies=1,
                       cost_head=None, cost_base=None, cost_error="no prices", capacity=None)  # fmt: skip
    text = diff.render([d])
    # A name holding a backtick keeps its own code span (literal, tags included): a longer fence, padded.
    code = "`` web`<img src=x onerror=alert(1)>` \\| injected \\| row \\| ``"
    assert f"| {code} |" in text
    assert "<img" not in text.replace(code, "") and "<b>" not in text
    assert not any(line.startswith("| injected") for line in text.splitlines())
    (listed,) = [line for line in text.splitlines() if line.startswith("- `aws:s3/bucket:Bucket`")]
    assert (
        listed
        == r"- `aws:s3/bucket:Bucket` web\`&lt;img src=x onerror=alert(1)&gt;\` \| injected \| row \|: inputs.a\_b"
    )
    (row,) = [line for line in text.splitlines() if line.startswith("| mandatory")]
    assert _cells(row) == 5, row
    assert r"| p\_&lt;b&gt; |" in row and r"bad \*web\`&lt;img" in row and r"\[x\](y)" in row


def test_the_comment_shows_the_modelled_cold_start_of_an_autoscaled_stack(plan_dirs):
    """The recorded plans predate the coldStart output (expected-comment.md stays as recorded); a head plan
    with it gets a cold-start line with every phase's basis, and the thresholds derived from it."""
    from inference_platform.settings.derived import cold_start_summary
    from tests.settings.test_inference import load

    base, head = plan_dirs
    head_plan = diff.read_plan(head / "dev.json.gz", "--head")
    head_plan.setdefault("outputs", {})["coldStart"] = cold_start_summary(load({}, "dev"))
    d = diff.compare("dev", diff.read_plan(base / "dev.json.gz", "--base"), head_plan)
    text = diff.render([d])
    assert "Cold start (scale-up decision to serving):" in text and "weights from S3" in text
    assert "(second-hand)" in text and "(measured)" not in text
    # The thresholds and their derivation, step by step (issue 31).
    assert "Autoscaling thresholds (derived):" in text and "- headroom:" in text and "- a replica holds:" in text


def test_the_comment_prices_total_and_output_tokens_of_a_planned_stack(plan_dirs):
    """The recorded plans predate the total figure; a head plan with prod's capacityPlan shows both."""
    from inference_platform.inferctl.cost.summary import capacity_line
    from inference_platform.settings.derived import capacity_summary as summary
    from tests.settings.test_inference import load

    base, head = plan_dirs
    planned = summary(load({}, "prod"))
    head_plan = diff.read_plan(head / "dev.json.gz", "--head")
    head_plan.setdefault("outputs", {})["capacityPlan"] = planned
    text = diff.render([diff.compare("dev", diff.read_plan(base / "dev.json.gz", "--base"), head_plan)])
    total = f"${planned['usdPerMillionTotalTokens']:.2f} per M total tokens (input + output at isl/osl 2000/500)"
    assert total in text and f"${planned['usdPerMillionOutputTokens']:.2f} per M output tokens" in text
    # A capacityPlan written before the total was exported still renders (output figure alone).
    old = {k: v for k, v in planned.items() if k not in ("usdPerMillionTotalTokens", "isl", "osl")}
    assert "per M total" not in capacity_line(old) and "per M output tokens" in capacity_line(old)
