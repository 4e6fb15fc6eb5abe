"""`inferctl diff`: compare offline plans of two commits and render the PR comment.

For every stack planned on the head commit: resources added, changed and removed by type (by URN, as the
engine would see them), the policy results (and what changed against the base), and the monthly cost
estimate with its delta. Exit 0 when written, 2 on unreadable plans. Works without cloud credentials:
it reads only the JSON `inferctl plan` writes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError
from inference_platform.inferctl.plan import routing_delta

MARKER = "<!-- inference-platform:offline-plan -->"
# What a resource's diff compares: its inputs and the options that change what the engine does.
COMPARED = ("inputs", "protect", "retainOnDelete", "ignoreChanges", "parent", "provider")
MAX_CHANGED_LISTED = 15


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("diff", help="plan diff and cost delta of two commits, as a PR comment")
    p.add_argument("--head", type=Path, required=True, help="directory of the head commit's plans (<stack>.json)")
    p.add_argument("--base", type=Path, help="directory of the base commit's plans (missing: all added)")
    p.add_argument("--stack", action="append", help="only these stacks (default: every plan in --head)")
    p.add_argument("--out", type=Path, help="write the Markdown here (default: print it)")
    p.add_argument("--title", default="Offline plan", help="comment title")
    p.add_argument(
        "--routing-head",
        type=Path,
        help="the head's routing benchmark report (python -m bench routing): adds its delta section",
    )
    p.add_argument("--routing-base", type=Path,
                   help="the base branch's routing benchmark report (missing file: the head's figures alone)")  # fmt: skip
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    stacks = args.stack or sorted(_stack_names(args.head))
    if not stacks:
        raise CommandError(f"--head: no plans (<stack>.json) in {args.head}", exit_code=2)
    sections = []
    for stack in stacks:
        head = read_plan(_find(args.head, stack), "--head")
        base_path = _find(args.base, stack) if args.base else None
        base = read_plan(base_path, "--base") if base_path and base_path.exists() else None
        sections.append(compare(stack, base, head))
    text = render(sections, title=args.title)
    if args.routing_head:
        routing = routing_delta.read_report(args.routing_head, "--routing-head")
        base_routing = None
        if args.routing_base and args.routing_base.exists():
            base_routing = routing_delta.read_report(args.routing_base, "--routing-base")
        text += "\n" + "\n".join(routing_delta.render(routing, base_routing)) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


def _stack_names(directory: Path) -> set[str]:
    names = set()
    for path in directory.glob("*.json*"):
        if path.name.endswith((".json", ".json.gz")):
            names.add(path.name.split(".json")[0])
    return names


def _find(directory: Path, stack: str) -> Path:
    plain = directory / f"{stack}.json"
    packed = directory / f"{stack}.json.gz"
    return packed if packed.exists() and not plain.exists() else plain


def read_plan(path: Path, flag: str) -> dict[str, Any]:
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        data = json.loads(raw)
    except (OSError, json.JSONDecodeError, gzip.BadGzipFile) as err:
        raise CommandError(f"{flag}: cannot read plan {path}: {err}", exit_code=2) from None
    if not isinstance(data, dict) or "resources" not in data:
        raise CommandError(f"{flag}: {path} is not a plan written by `inferctl plan`", exit_code=2)
    return data


@dataclass(frozen=True)
class StackDiff:
    stack: str
    base_present: bool
    added: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    changed: list[tuple[dict[str, Any], list[str]]]
    violations: list[dict[str, Any]]
    new_violations: list[dict[str, Any]]
    fixed_violations: list[dict[str, Any]]
    policies: int
    cost_head: Any
    cost_base: Any
    cost_error: str | None
    capacity: dict[str, Any] | None
    cold_start: dict[str, Any] | None = None
    cold_start_base: dict[str, Any] | None = None
    drain: dict[str, Any] | None = None
    picker: str | None = None
    """The endpoint picker's share of the system nodes, one line (inferctl/cost/picker.py)."""

    @property
    def mandatory(self) -> list[dict[str, Any]]:
        return [v for v in self.violations if v.get("level") == "mandatory"]


def compare(stack: str, base: dict[str, Any] | None, head: dict[str, Any]) -> StackDiff:
    old = {r["urn"]: r for r in (base or {}).get("resources", [])}
    new = {r["urn"]: r for r in head["resources"]}
    added = [new[u] for u in sorted(new.keys() - old.keys())]
    removed = [old[u] for u in sorted(old.keys() - new.keys())]
    changed = []
    for urn in sorted(new.keys() & old.keys()):
        keys = _changed_keys(old[urn], new[urn])
        if keys:
            changed.append((new[urn], keys))
    violations = list(head.get("policies", {}).get("violations", []))
    before = list((base or {}).get("policies", {}).get("violations", []))
    key = lambda v: (v.get("policy"), v.get("urn"), v.get("message"))  # noqa: E731
    old_keys = {key(v) for v in before}
    new_keys = {key(v) for v in violations}
    cost_head, cost_base, error = _costs(stack, base, head)
    return StackDiff(
        stack=stack,
        base_present=base is not None,
        added=added,
        removed=removed,
        changed=changed,
        violations=violations,
        new_violations=[v for v in violations if key(v) not in old_keys],
        fixed_violations=[v for v in before if key(v) not in new_keys],
        policies=len(head.get("policies", {}).get("evaluated", [])),
        cost_head=cost_head,
        cost_base=cost_base,
        cost_error=error,
        capacity=(head.get("outputs") or {}).get("capacityPlan"),
        cold_start=(head.get("outputs") or {}).get("coldStart"),
        cold_start_base=((base or {}).get("outputs") or {}).get("coldStart"),
        drain=(head.get("outputs") or {}).get("drain"),
        picker=_picker(head, cost_head),
    )


def _picker(head: dict[str, Any], estimate: Any) -> str | None:
    from inference_platform.inferctl.cost.picker import picker_cost, picker_line

    if estimate is None:
        return None  # the region is not priced: the cost section says so
    found = picker_cost(head["resources"], estimate.region)
    return picker_line(found) if found is not None else None


def _changed_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys: list[str] = []
    for field in COMPARED:
        keys += _paths(field, old.get(field), new.get(field), depth=0)
    return keys


def _paths(prefix: str, a: Any, b: Any, depth: int) -> list[str]:
    """Dotted paths where ``a`` and ``b`` differ, down to the first differing leaf (at most 5 levels)."""
    if _canon(a) == _canon(b):
        return []
    if isinstance(a, dict) and isinstance(b, dict) and depth < 5:
        out: list[str] = []
        for k in sorted(a.keys() | b.keys()):
            out += _paths(f"{prefix}.{k}", a.get(k), b.get(k), depth + 1)
        return out
    return [prefix]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _costs(stack: str, base: dict[str, Any] | None, head: dict[str, Any]) -> tuple[Any, Any, str | None]:
    from inference_platform.catalog.prices import PriceError
    from inference_platform.inferctl.cost.summary import estimate_for

    try:
        h = estimate_for(head["resources"], head.get("outputs"), stack)
        b = estimate_for(base["resources"], base.get("outputs"), stack) if base else None
    except PriceError as err:
        return None, None, str(err)
    return h, b, None


def _by_type(diff: StackDiff) -> list[tuple[str, int, int, int]]:
    added = Counter(r["type"] for r in diff.added)
    changed = Counter(r["type"] for r, _ in diff.changed)
    removed = Counter(r["type"] for r in diff.removed)
    types = sorted(added.keys() | changed.keys() | removed.keys())
    return [(t, added[t], changed[t], removed[t]) for t in types]


def _money(v: float) -> str:
    return f"${v:,.0f}" if abs(v) >= 100 else f"${v:,.2f}"


def _signed(v: float) -> str:
    return ("+" if v >= 0 else "-") + _money(abs(v))


def _short(urn: str | None) -> str:
    return _code(urn.split("::")[-1]) if urn else "stack"


# Names and messages come from the plans of a pull request's own code: written as text, never markup
# (a backtick, a tag or a newline in a resource name must not reshape the comment or a table row).
_MARKDOWN = {"\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]", "|": "\\|",
             "<": "&lt;", ">": "&gt;", "&": "&amp;"}  # fmt: skip


def _text(value: Any) -> str:
    """``value`` as literal Markdown text on one line, safe inside a table cell."""
    return "".join(_MARKDOWN.get(c, c) for c in " ".join(str(value).splitlines()))


def _code(value: Any) -> str:
    """``value`` as an inline code span on one line: the fence is longer than any backtick run inside
    (CommonMark), and ``|`` is escaped for GitHub's tables, which split cells before reading code."""
    text = " ".join(str(value).splitlines()).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    pad = " " if longest else ""
    return f"{'`' * (longest + 1)}{pad}{text}{pad}{'`' * (longest + 1)}"


def render(sections: list[StackDiff], *, title: str = "Offline plan") -> str:
    lines = [MARKER, f"## {title}", ""]
    lines += ["| stack | resources +/~/- | policies | monthly cost (expected) | delta |", "|---|---|---|---|---|"]
    for d in sections:
        status = f"❌ {len(d.mandatory)} mandatory" if d.mandatory else "✅"
        if d.violations and not d.mandatory:
            status += f" ({len(d.violations)} advisory)"
        cost, delta = "unknown", "—"
        if d.cost_head is not None:
            cost = _money(d.cost_head.monthly_expected)
            if d.cost_base is not None:
                delta = _signed(d.cost_head.monthly_expected - d.cost_base.monthly_expected)
        counts = f"+{len(d.added)} ~{len(d.changed)} -{len(d.removed)}" + ("" if d.base_present else " (no base)")
        lines.append(f"| {_code(d.stack)} | {counts} | {status} | {cost} | {delta} |")
    for d in sections:
        lines += ["", f"### {_code(d.stack)}", ""]
        lines += [*_resources(d), "", *_policy_lines(d), "", *_cost_lines(d)]
    lines += ["", "<sub>Offline plan under the mock engine (`make plan`); costs from the dated price table "
                  "(`inferctl cost`). No cloud credentials were used.</sub>"]  # fmt: skip
    return "\n".join(lines) + "\n"


def _resources(d: StackDiff) -> list[str]:
    rows = _by_type(d)
    if not rows:
        return ["No resource changes."]
    out = ["| type | added | changed | removed |", "|---|---:|---:|---:|"]
    out += [f"| {_code(t)} | {a or ''} | {c or ''} | {r or ''} |" for t, a, c, r in rows]
    if d.changed:
        out += ["", "<details><summary>changed resources</summary>", ""]
        for r, keys in d.changed[:MAX_CHANGED_LISTED]:
            listed = ", ".join(_text(k) for k in keys[:6])
            out.append(f"- {_code(r['type'])} {_text(r['name'])}: {listed}{' …' if len(keys) > 6 else ''}")
        if len(d.changed) > MAX_CHANGED_LISTED:
            out.append(f"- … and {len(d.changed) - MAX_CHANGED_LISTED} more")
        out += ["", "</details>"]
    return out


def _policy_lines(d: StackDiff) -> list[str]:
    if not d.violations:
        out = [f"Policies: {d.policies} evaluated, no violations."]
    else:
        out = [f"Policies: {d.policies} evaluated, {len(d.violations)} violation(s):", "",
               "| level | policy | resource | message |", "|---|---|---|---|"]  # fmt: skip
        out += [
            f"| {_text(v.get('level'))} | {_text(v.get('policy'))} | {_short(v.get('urn'))} | {_text(v.get('message', ''))} |"
            for v in d.violations
        ]
    if d.base_present and (d.new_violations or d.fixed_violations):
        out.append(f"\nAgainst the base: {len(d.new_violations)} new, {len(d.fixed_violations)} fixed.")
    return out


def _cost_lines(d: StackDiff) -> list[str]:
    if d.cost_head is None:
        return [f"Monthly cost: not estimated ({d.cost_error})."]
    h, b = d.cost_head, d.cost_base
    out = [
        f"Monthly cost ({h.region}): expected **{_money(h.monthly_expected)}** (min {_money(h.monthly_min)}, "
        f"max {_money(h.monthly_max)})"
        + (f", {_signed(h.monthly_expected - b.monthly_expected)} against the base." if b is not None else ".")
    ]
    if b is not None:
        ha, ba = h.by("area"), b.by("area")
        deltas = [(a, ha.get(a, (0, 0, 0))[1] - ba.get(a, (0, 0, 0))[1]) for a in sorted(ha.keys() | ba.keys())]
        deltas = [(a, v) for a, v in deltas if abs(v) >= 0.005]
        if deltas:
            out += ["", "| area | base | head | delta |", "|---|---:|---:|---:|"]
            out += [
                f"| {a} | {_money(ba.get(a, (0, 0, 0))[1])} | {_money(ha.get(a, (0, 0, 0))[1])} | {_signed(v)} |"
                for a, v in deltas
            ]
    if h.unknown:
        out.append(f"\n{len(h.unknown)} resource(s) of unknown cost, not counted: "
                   + ", ".join(f"`{u.type}` {u.name}" for u in h.unknown))  # fmt: skip
    if d.capacity:
        from inference_platform.inferctl.cost.summary import capacity_line

        out.append("\n" + capacity_line(d.capacity))
    if d.cold_start:
        from inference_platform.inferctl.cost.summary import cold_start_line

        out.append("\n" + cold_start_line(d.cold_start))
        moved = _thresholds_moved(d.cold_start_base, d.cold_start)
        if moved:
            out.append(moved)
    if d.drain:
        from inference_platform.inferctl.cost.summary import drain_line

        out.append("\n" + drain_line(d.drain))
    if d.picker:
        out.append("\n" + d.picker)
    return out


def _thresholds_moved(base: Any, head: Mapping[str, Any]) -> str | None:
    """One line when the autoscaling target differs from the base's, with what moved it: what a replica holds, the
    scale-up and its headroom (issue 31: a change of instance type, storage or image shows its reason)."""
    b = base.get("thresholds") if isinstance(base, Mapping) else None
    h = head.get("thresholds")
    if not isinstance(b, Mapping) or not isinstance(h, Mapping):
        return None
    keys = ("targetRequests", "kvCacheTarget", "hold", "scaleUpSeconds", "scaleUpPath", "headroom")
    if any(k not in b or k not in h for k in keys) or all(b[k] == h[k] for k in keys):
        return None  # the same, or a plan written before these were exported
    return (
        f"Autoscaling thresholds against the base: target {float(b['targetRequests']):g} -> "
        f"{float(h['targetRequests']):g} requests in flight per replica, kvCacheTarget {float(b['kvCacheTarget']):g} -> "
        f"{float(h['kvCacheTarget']):g}; a replica holds {int(b['hold'])} -> {int(h['hold'])}, one scale-up "
        f"{float(b['scaleUpSeconds']) / 60:.1f} -> {float(h['scaleUpSeconds']) / 60:.1f} min ({b['scaleUpPath']} -> "
        f"{h['scaleUpPath']}), headroom {float(b['headroom']):.1%} -> {float(h['headroom']):.1%}"
    )
