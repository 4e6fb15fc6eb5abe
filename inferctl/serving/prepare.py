"""``inferctl prepare``: compile a Neuron stack's model and publish it.

Runs in the Neuron image on a node of the serving pool. ``--plan-only`` prints what would be compiled
(NxD Inference's NeuronConfig) and refuses the same way, anywhere. GPU stacks are refused (exit 2): the
LLM API serves the published checkpoint, nothing is built. Exit status: 0 published, 1 build/store
failure, 2 refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from inference_platform.inference_image import settings_source

DEFAULT_WORK_DIR = Path("/work")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "prepare",
        help="compile a Neuron model for the serving pool and publish it with the artifacts API",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    settings_source.add_arguments(parser)
    parser.add_argument("--instance-type", required=True, help="EC2 instance type of the serving pool, e.g. g6.xlarge")
    parser.add_argument(
        "--engine-uri", help="s3:// version to publish the engine to (default serving.artifacts.engineUri)"
    )
    parser.add_argument(
        "--tokenizer-uri", help="s3:// version for the tokenizer (default serving.artifacts.tokenizerUri)"
    )
    parser.add_argument("--checkpoint", help="HF model id, directory or s3:// version (default serving.checkpoint)")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=DEFAULT_WORK_DIR,
        help=f"scratch directory for the checkpoint and the compiled model (default {DEFAULT_WORK_DIR})",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing version")
    parser.add_argument("--plan-only", action="store_true", help="print the build plan and exit")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from inference_platform.errors import CommandError
    from inference_platform.inference_image import prepare

    serving = settings_source.load(args)
    options = prepare.PrepareOptions(
        instance_type=args.instance_type,
        engine_uri=args.engine_uri or serving.artifacts.engine_uri or "",
        tokenizer_uri=args.tokenizer_uri or serving.artifacts.tokenizer_uri or "",
        work_dir=args.work_dir,
        checkpoint=args.checkpoint,
        force=args.force,
    )
    plan = prepare.plan_for(serving, options)
    if args.plan_only:
        print(json.dumps(describe(plan, options), indent=2))
        return 0
    if not options.engine_uri or not options.tokenizer_uri:
        raise CommandError("no engine/tokenizer URI: set serving.artifacts or pass --engine-uri/--tokenizer-uri", 2)
    engine, tokenizer = prepare.run_prepare(serving, options)
    print(f"prepare: published engine {engine.sha256[:12]} and tokenizer {tokenizer.sha256[:12]}", file=sys.stderr)
    return 0


def describe(plan: Any, options: Any) -> dict[str, Any]:
    from inference_platform.inference_image.build_plan import NeuronCompilePlan

    out: dict[str, Any] = {"target": dataclasses.asdict(plan.target)}
    assert isinstance(plan, NeuronCompilePlan)
    out["neuron_config"] = plan.neuron_config_arguments(options.work_dir / "quantized" if plan.quantized else None)
    return out
