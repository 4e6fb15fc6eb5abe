"""Issue 31 "Done when": the derived autoscaling thresholds are shown in the plan and in the PR comment, through the
real commands on the shipped prod stack, and a change of the image pull changes them with a visible reason."""

from __future__ import annotations

import json

import yaml

from inference_platform.inferctl.cli import main
from inference_platform.inferctl.cost.summary import thresholds_line
from tests.conftest import REPO
from tests.settings.test_plan_exit import stack_text


def _plan(tmp_path, out: str, *extra: str) -> dict:
    args = ["plan", "--program", str(REPO), "--stack", "prod", "--out", str(tmp_path / out), "--quiet", *extra]
    assert main(args) == 0
    return json.loads((tmp_path / out / "prod.json").read_text())


def test_the_plan_and_the_pr_comment_show_the_derived_thresholds_and_why_they_change(tmp_path, capsys):
    # Base: prod with parallel pulls and no image cache; head: prod as shipped (coldStart.imagePull cached).
    full = tmp_path / "Pulumi.prod.yaml"
    doc = yaml.safe_load(stack_text("prod", "coldStart", "imagePull", "parallel"))
    doc["config"]["inference-platform:coldStart"].pop("imageCache")
    full.write_text(yaml.safe_dump(doc))
    base = _plan(tmp_path, "base", "--stack-file", str(full))
    head = _plan(tmp_path, "head")
    tb, th = base["outputs"]["coldStart"]["thresholds"], head["outputs"]["coldStart"]["thresholds"]
    # The image cache changes the scale-up, so the headroom, so the target; what a replica holds does not move.
    assert tb["hold"] == th["hold"] == 64 and not tb.get("handSet") and not th.get("handSet")
    assert th["scaleUpSeconds"] < tb["scaleUpSeconds"] and th["headroom"] < tb["headroom"]
    assert th["targetRequests"] == int(th["derivedTargetRequests"]) == 55
    assert tb["targetRequests"] == int(tb["derivedTargetRequests"]) == 53
    # The rendered ScaledObject carries each side's derived target, in its trigger and in its formula.
    for plan, t in ((base, tb), (head, th)):
        (so,) = [r for r in plan["resources"] if r["name"] == "inference-autoscaling-scaled-object"]
        (requests,) = [tr for tr in so["inputs"]["spec"]["triggers"] if tr.get("name") == "requests"]
        assert requests["metadata"]["threshold"] == f"{t['targetRequests']:g}"
        assert (
            f"(requests ?? 0) / {t['targetRequests']:g},"
            in so["inputs"]["spec"]["advanced"]["scalingModifiers"]["formula"]
        )

    # The plan (its Markdown summary) shows the line and every step of the derivation.
    md = (tmp_path / "head" / "prod.md").read_text()
    assert thresholds_line(th) in md and "Autoscaling thresholds (derived): 55 requests in flight per replica" in md
    for step in th["steps"]:
        assert f"  - {step['what']}: {step['value']} ({step['source']})" in md

    # The PR comment shows both, so the reviewer sees the target move and why (the scale-up and its headroom).
    comment = tmp_path / "comment.md"
    capsys.readouterr()
    assert main(["diff", "--base", str(tmp_path / "base"), "--head", str(tmp_path / "head"), "--out",
                 str(comment)]) == 0  # fmt: skip
    text = comment.read_text()
    assert thresholds_line(th) in text and "Autoscaling thresholds (derived): 55 requests in flight per replica" in text
    headroom = next(s for s in th["steps"] if s["what"] == "headroom")
    assert f"  - headroom: {headroom['value']} ({headroom['source']})" in text
    # Against the base: the target moved, and the line says what moved it (the scale-up and its headroom).
    moved = (f"Autoscaling thresholds against the base: target 53 -> 55 requests in flight per replica, kvCacheTarget "
             f"0.85 -> 0.85; a replica holds 64 -> 64, one scale-up {tb['scaleUpSeconds'] / 60:.1f} -> "
             f"{th['scaleUpSeconds'] / 60:.1f} min (new node -> new node), headroom {tb['headroom']:.1%} -> "
             f"{th['headroom']:.1%}")  # fmt: skip
    assert moved in text and "inference-autoscaling-scaled-object" in text
    # A plan against itself says nothing moved.
    assert main(["diff", "--base", str(tmp_path / "head"), "--head", str(tmp_path / "head"), "--out",
                 str(comment)]) == 0  # fmt: skip
    assert (
        "Autoscaling thresholds against the base" not in comment.read_text()
        and thresholds_line(th) in comment.read_text()
    )
