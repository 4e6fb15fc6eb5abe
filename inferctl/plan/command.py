"""`inferctl plan`: the offline plan of a stack (exit 0 planned, 1 mandatory violations, 2 config or
program error). ``--stack`` repeats: several stacks in one process pay the provider SDKs' imports once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError

DEFAULT_OUT = Path("build") / "plan"
"""Under the planned project's root (the folder of its Pulumi.yaml): each project writes its own plans."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("plan", help="offline plan of a stack: resources, policies, manifests")
    parser.add_argument(
        "--stack",
        action="append",
        dest="stacks",
        metavar="STACK",
        help="stack name (default: dev); repeat it to plan several stacks in one process (imports paid once)",
    )
    parser.add_argument(
        "--stack-file",
        type=Path,
        action="append",
        dest="stack_files",
        help="alternative stack config file; with several --stack, one per --stack in the same order",
    )
    parser.add_argument("--program", type=Path, default=Path("."), help="directory holding Pulumi.yaml")
    parser.add_argument(
        "--out", type=Path, help="output directory (default build/plan under the program's project, beside Pulumi.yaml)"
    )
    parser.add_argument(
        "--policy-config",
        type=Path,
        help="policy pack config JSON (default: policies/config/<stack>.json of the program's project, if it has one; "
        "without either the pack runs on its defaults, which allow no accelerators, and the plan says so)",
    )
    parser.add_argument("--quiet", action="store_true", help="print only the summary line and violations")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    stacks = list(args.stacks or ["dev"]) if args.stack_files else list(dict.fromkeys(args.stacks or ["dev"]))
    files = list(args.stack_files or [])
    if files and len(files) != len(stacks):
        raise CommandError("--stack-file names one stack's file: give one --stack per --stack-file", exit_code=2)
    if len(stacks) > 1 and args.policy_config:
        raise CommandError("--policy-config names one stack's file: give one --stack", exit_code=2)
    if len(set(stacks)) != len(stacks):
        raise CommandError(f"--stack: a stack given twice ({', '.join(stacks)})", exit_code=2)
    status = 0
    plans: list[Any] = []
    for stack, stack_file in zip(stacks, files or [None] * len(stacks), strict=True):
        code, plan = _run_one(args, stack, stack_file)
        status, plans = max(status, code), [*plans, plan]
    return max(status, _collisions(plans))


def _collisions(plans: list[Any]) -> int:
    """Two stacks planned together must not share a physical name: in one AWS account the second
    ``pulumi up`` fails on it, or both stacks manage one resource (policies/rules/names.py)."""
    from inference_platform.policies.rules.names import colliding_names

    status = 0
    for i, first in enumerate(plans):
        for second in plans[i + 1 :]:
            a, b = first.run.config, second.run.config
            same_region = a.values.get("aws:region") == b.values.get("aws:region")
            found = colliding_names(first.run.resources, second.run.resources, same_region=same_region)
            if not found:
                continue
            status = 1
            print(f"\nstacks {a.stack} and {b.stack} would share {len(found)} physical name(s) in one AWS account; "
                  "rename one stack (names over 40 characters get a hash of the whole name):", file=sys.stderr)  # fmt: skip
            for c in found:
                print(f"  {c.what} {c.value!r}\n      {c.urns[0]}\n      {c.urns[1]}", file=sys.stderr)
    return status


def _run_one(args: argparse.Namespace, stack: str, stack_file: Path | None) -> tuple[int, Any]:
    try:
        plan = make_plan(args.program, stack, stack_file=stack_file, policy_config=args.policy_config)
    except CommandError as err:
        # Every error names its stack: a component's refusal of a physical name derived from it
        # (e.g. an ECR repository) otherwise does not say which stack name made it.
        raise CommandError(f"stack {stack}: {err}", exit_code=err.exit_code) from None
    json_path, md_path = write_outputs(plan, args.out or plan.run.project.root / DEFAULT_OUT)
    from inference_platform.inferctl.plan.report import policy_lines, tree

    if args.quiet:
        print(f"{stack}: {len(plan.run.resources)} resources; " + policy_lines(plan))
    else:
        print(tree(plan))
    print(f"\nWrote {json_path} and {md_path}")
    return (1 if plan.mandatory else 0), plan


def make_plan(program: Path, stack: str, *, stack_file: Path | None = None, policy_config: Path | None = None,
              secret_values: dict[str, str] | None = None) -> Any:  # fmt: skip
    """Run the program, evaluate the pack; the ``Plan`` the reports are made from."""
    from inference_platform.inferctl.plan.report import Plan
    from inference_platform.offline_plan.collector import collector_paused
    from inference_platform.offline_plan.engine import run_program
    from inference_platform.offline_plan.policy_runner import evaluate
    from inference_platform.policies.pack import ENFORCEMENT_LEVEL, POLICIES

    chosen = policy_config_for(program, stack, policy_config)
    with collector_paused():
        program_run = run_program(program, stack, stack_file=stack_file, secret_values=secret_values)
        violations = evaluate(program_run.resources, POLICIES, pack_level=ENFORCEMENT_LEVEL, config=chosen.values)
    for line in program_run.logs:
        print(line, file=sys.stderr)
    if chosen.note:
        print(f"stack {stack}: {chosen.note}", file=sys.stderr)
    return Plan(program_run, violations, [p.name for p in POLICIES], chosen)


def policy_config_for(program: Path, stack: str, path: Path | None = None) -> Any:
    """The pack configuration a plan of ``stack`` uses (offline_plan.policy_config.select): ``path``, else the
    program's project's ``policies/config/<stack>.json``, else none."""
    from inference_platform.offline_plan.policy_config import select
    from inference_platform.settings.project import load_project

    return select(path, load_project(program).root, stack)


def write_outputs(plan: Any, out: Path) -> tuple[Path, Path]:
    from inference_platform.inferctl.plan.report import write
    from inference_platform.offline_plan.manifests import write_manifests
    from inference_platform.offline_plan.model_repository import write_model_repository

    paths = write(plan, out)
    write_manifests(plan.run.resources, out / plan.run.config.stack / "manifests")
    write_model_repository(plan.run.resources, out / plan.run.config.stack / "model-repository")
    return paths
