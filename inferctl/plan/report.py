"""Renders a plan: the preview-like tree, ``build/plan/<stack>.json`` and the PR-comment Markdown."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference_platform.offline_plan.engine import ProgramRun
from inference_platform.offline_plan.policy_config import PolicyConfig
from inference_platform.offline_plan.policy_runner import Violation
from inference_platform.offline_plan.recorder import RecordedResource
from inference_platform.offline_plan.redact import redact
from inference_platform.redaction import scrub


@dataclass(frozen=True)
class Plan:
    run: ProgramRun
    violations: list[Violation]
    policies: list[str]
    policy_config: PolicyConfig = field(default_factory=PolicyConfig)
    """The pack configuration the violations were found with (offline_plan.policy_config.select)."""

    @property
    def mandatory(self) -> list[Violation]:
        return [v for v in self.violations if v.mandatory]


def to_json(plan: Plan) -> dict[str, Any]:
    run = plan.run
    return {
        "project": run.project.name,
        "stack": run.config.stack,
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent,
                "custom": r.custom,
                "id": r.id,
                "provider": r.provider,
                "inputs": redact(r.inputs),
                "dependencies": r.dependencies,
                "propertyDependencies": r.property_dependencies,
                "protect": r.protect,
                "retainOnDelete": r.retain_on_delete,
                "ignoreChanges": r.ignore_changes,
                "deleteBeforeReplace": r.delete_before_replace,
            }
            for r in run.resources
        ],
        "outputs": redact(run.outputs),
        "summary": {
            "resources": len(run.resources),
            "byType": dict(sorted(Counter(r.type for r in run.resources).items())),
            "planSeconds": round(run.seconds, 3),
        },
        "policies": {
            "evaluated": plan.policies,
            "violations": [
                {
                    "policy": v.policy,
                    "level": v.level,
                    "urn": scrub(v.urn) if v.urn else v.urn,
                    "message": scrub(v.message),
                }
                for v in plan.violations
            ],
        },
    }


def write(plan: Plan, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stack = plan.run.config.stack
    json_path, md_path = out_dir / f"{stack}.json", out_dir / f"{stack}.md"
    # Whole text: names, URNs and ids quote what the program was given too (inference_platform.redaction).
    json_path.write_text(scrub(json.dumps(to_json(plan), indent=2, sort_keys=False)) + "\n")
    md_path.write_text(markdown(plan))  # markdown() scrubs: the PR comment
    return json_path, md_path


def tree(plan: Plan) -> str:
    run = plan.run
    children: dict[str | None, list[RecordedResource]] = defaultdict(list)
    for r in run.resources:
        children[r.parent].append(r)
    rows: list[tuple[str, str]] = [("pulumi:pulumi:Stack", f"{run.project.name}-{run.config.stack}")]

    def walk(parent: str | None, prefix: str) -> None:
        items = sorted(children.get(parent, []), key=lambda r: (r.custom, r.type, r.name))
        for i, r in enumerate(items):
            last = i == len(items) - 1
            flags = "".join(f" [{f}]" for f, on in (("protect", r.protect), ("retain", r.retain_on_delete)) if on)
            rows.append((f"{prefix}{'└─' if last else '├─'} {r.type}", r.name + flags))
            walk(r.urn, prefix + ("   " if last else "│  "))

    walk(None, "")
    width = max(len(t) for t, _ in rows) + 2
    lines = [f"Previewing stack {run.config.stack} of {run.project.name} (offline, mock engine)", ""]
    lines.append(f"     {'Type':<{width}}Name")
    lines += [f" +   {t:<{width}}{n}" for t, n in rows]
    counts = Counter(r.type for r in run.resources)
    lines += ["", f"Resources: + {len(run.resources)} to create ({run.seconds:.2f} s)"]
    lines += [f"    {n:4d}  {t}" for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    lines += ["", policy_lines(plan), "", cost_line(plan)]
    return scrub("\n".join(lines))


def cost_line(plan: Plan) -> str:
    """The stack's monthly estimate (inferctl cost) in one line."""
    from inference_platform.inferctl.cost.summary import resources_as_dicts, summary_line

    return summary_line(resources_as_dicts(plan.run.resources), plan.run.outputs, plan.run.config.stack,
                        plan.policy_config.source, plan.run.project.root)  # fmt: skip


def policy_lines(plan: Plan) -> str:
    config = f"policy config {plan.policy_config.source}" if plan.policy_config.source else plan.policy_config.note
    if not plan.violations:
        return f"Policies: {len(plan.policies)} evaluated, no violations ({config})."
    lines = [f"Policies: {len(plan.policies)} evaluated, {len(plan.violations)} violation(s) ({config}):"]
    for v in plan.violations:
        lines.append(f"  [{v.level}] {v.policy}: {v.message}" + (f"\n      {v.urn}" if v.urn else ""))
    return scrub("\n".join(lines))


def markdown(plan: Plan) -> str:
    run = plan.run
    counts = Counter(r.type for r in run.resources)
    status = "❌ blocked by mandatory policy violations" if plan.mandatory else "✅ no mandatory policy violations"
    lines = [
        f"### Offline plan: `{run.project.name}` / `{run.config.stack}`",
        "",
        f"{status} — {len(run.resources)} resources, {len(plan.policies)} policies.",
        "",
        cost_line(plan),
        "",
        "| resources | type |",
        "|---:|---|",
        *(f"| {n} | `{t}` |" for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
    ]
    protected = [r for r in run.resources if r.protect]
    if protected:
        lines += ["", f"Protected (and retained on delete) in this stack: {len(protected)}", ""]
        lines += [f"- `{r.type}` {r.name}" + (" (retain)" if r.retain_on_delete else "") for r in protected]
    if plan.violations:
        lines += ["", "| level | policy | resource | message |", "|---|---|---|---|"]
        lines += [f"| {v.level} | {v.policy} | {_short(v.urn)} | {v.message} |" for v in plan.violations]
    # The PR comment: whatever a name or message quotes, no credential is posted (inference_platform.redaction).
    return scrub("\n".join(lines)) + "\n"


def _short(urn: str | None) -> str:
    return f"`{urn.split('::')[-1]}`" if urn else "stack"
