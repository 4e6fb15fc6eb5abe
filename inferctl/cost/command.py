"""`inferctl cost build/plan/<stack>.json [--against base.json] [--json]` (exit 2 on a bad plan file or a
region the price table lacks)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("cost", help="monthly cost of a plan per resource and area, and its delta")
    p.add_argument("plan", type=Path, help="plan JSON written by `inferctl plan` (build/plan/<stack>.json)")
    p.add_argument("--against", type=Path, help="base plan JSON to compare with")
    p.add_argument("--json", action="store_true", help="print the estimate as JSON")
    p.add_argument(
        "--policy-config",
        type=Path,
        help="policy config whose cost-monthly-budget.assumptions set usage (default policies/config/<stack>.json)",
    )
    p.set_defaults(handler=run)


def load_plan(path: Path, flag: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise CommandError(f"{flag}: cannot read plan {path}: {err}", exit_code=2) from None
    if not isinstance(data, dict) or "resources" not in data:
        raise CommandError(f"{flag}: {path} is not a plan written by `inferctl plan`", exit_code=2)
    return data


def estimate_plan(data: dict[str, Any], flag: str, policy_config: Path | None = None) -> Any:
    from inference_platform.catalog.prices import PriceError
    from inference_platform.inferctl.cost.summary import usage_for
    from inference_platform.planners import costing

    usage = usage_for(str(data.get("stack", "")), policy_config)
    try:
        return costing.estimate(data["resources"], region=costing.plan_region(data), usage=usage)
    except PriceError as err:
        raise CommandError(f"{flag}: {err}", exit_code=2) from None


def run(args: argparse.Namespace) -> int:
    from inference_platform.inferctl.cost import canary as canary_cost
    from inference_platform.inferctl.cost import picker as picker_cost
    from inference_platform.inferctl.cost.render import delta_json, estimate_json, text
    from inference_platform.inferctl.cost.summary import usage_for

    data = load_plan(args.plan, "plan")
    head = estimate_plan(data, "plan", args.policy_config)
    canary = canary_cost.canary_cost(
        data["resources"], data.get("outputs"), head, usage_for(str(data.get("stack", "")), args.policy_config)
    )
    picker = picker_cost.picker_cost(data["resources"], head.region)
    base = (
        estimate_plan(load_plan(args.against, "--against"), "--against", args.policy_config) if args.against else None
    )
    if args.json:
        out = estimate_json(head)
        if base is not None:
            out["against"] = delta_json(head, base)
        if canary is not None:
            out["canary"] = canary_cost.as_json(canary)
        if picker is not None:
            out["endpointPicker"] = picker_cost.as_json(picker)
        print(json.dumps(out, indent=2))
    else:
        extra = [canary_cost.canary_line(canary)] if canary is not None else []
        extra += [picker_cost.picker_line(picker)] if picker is not None else []
        print(text(head, base) + "".join(f"\n\n  {line}" for line in extra))
    return 0
