"""The cold start (planners/cold_start.py), for ``capacity plan`` options and for a stack: ``inferctl capacity
cold-start --stack S`` prints both paths phase by phase with each figure's source and basis, the options the stack
uses and what the others would give, and the autoscaling thresholds derived from it.

Without a stack, the plan cannot know the provisioner or where the weights come from: flags say it
(``--provisioner``, ``--model-source``, ``--fsx-mb-s``, ``--image-pull``, ``--download-concurrency``), and the
node's NVMe disks are used when the instance type has them (what the stacks' ``nodePools.<pool>.localStorage:
auto`` does).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

GIB = 2**30


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--provisioner", choices=("managed", "karpenter"), default="managed",
                   help="who launches nodes, for the cold start (default managed: cluster autoscaler)")  # fmt: skip
    p.add_argument("--model-source", choices=("download", "fsx"), default="download",
                   help="where weights come from on a cold start (default download from S3)")  # fmt: skip
    p.add_argument("--fsx-mb-s", type=float, default=None,
                   help="FSx disk baseline (MB/s: TiB x perUnitStorageThroughput) with --model-source fsx")  # fmt: skip
    p.add_argument("--image-pull", choices=("full", "parallel", "cached"), default="full",
                   help="parallel: nodeadm FastImagePull on the nodes; cached: the image on a volume restored from a "
                        "fast-restored snapshot (default full)")  # fmt: skip
    p.add_argument("--download-concurrency", type=int, default=10,
                   help="ranged GETs of the weights download (default 10)")  # fmt: skip
    p.add_argument("--ramp-percent-per-hour", type=float, default=100.0,
                   help="fastest planned rise of the load, %% of itself per hour (default 100): the headroom a "
                        "scale-up needs")  # fmt: skip


def checks(args: argparse.Namespace) -> list[tuple[str, bool, str]]:
    import math

    fsx = args.fsx_mb_s
    ramp = args.ramp_percent_per_hour
    return [
        ("--fsx-mb-s", args.model_source != "fsx" or (fsx is not None and math.isfinite(fsx) and fsx > 0),
         f"got {fsx}; --model-source fsx needs the file system's throughput (a finite MB/s > 0)"),
        ("--ramp-percent-per-hour", math.isfinite(ramp) and 0 <= ramp <= 10000,
         f"got {ramp:g}; expected a finite value in [0, 10000]"),
        ("--download-concurrency", 1 <= args.download_concurrency <= 64,
         f"got {args.download_concurrency}; expected 1 to 64"),
    ]  # fmt: skip


def for_option(option: Any, args: argparse.Namespace) -> Any:
    from inference_platform.catalog import models
    from inference_platform.planners import cold_start

    replica = option.replica
    d = cold_start.disks(replica.node.name)
    inputs = cold_start.StartInputs(
        provisioner=args.provisioner,
        instance_type=replica.node.name,
        accelerators_per_node=replica.node.accelerator_count,
        image_pull=args.image_pull,
        model_gib=models.weight_bytes(replica.model, replica.precision) / GIB,
        source=args.model_source,
        fsx_mb_s=args.fsx_mb_s,
        pods_per_node=option.replicas_per_node,
        local_nvme=bool(d and d.nvme_count),
        ebs_mib_s=cold_start.GP3_MAX_MIB_S,
        copy_streams=cold_start.PARALLEL_COPY_STREAMS,
        download_concurrency=args.download_concurrency,
    )
    return cold_start.model(inputs)


def as_json(cs: Any, ramp_percent_per_hour: float) -> dict[str, Any]:
    from inference_platform.planners import cold_start

    out: dict[str, Any] = cs.to_dict()
    out["rampPercentPerHour"] = ramp_percent_per_hour
    out["maxTargetShare"] = round(cold_start.max_target_share(cs.scale_up_s, ramp_percent_per_hour / 100), 3)
    return out


def as_text(cs: Any, ramp_percent_per_hour: float) -> str:
    from inference_platform.planners import cold_start

    share = cold_start.max_target_share(cs.scale_up_s, ramp_percent_per_hour / 100)
    lines = cold_start.text(cs)
    lines.append(
        f"  headroom: at a ramp of {ramp_percent_per_hour:g} %/h, scale out by {1 - share:.0%} below what a replica "
        f"holds within the SLO (target at most {share:.0%} of it)"
    )
    return "\n".join(lines)


def register(sub: Any) -> None:
    p = sub.add_parser("cold-start", help="a stack's scale-up phase by phase, with sources, options and thresholds")
    p.add_argument("--stack", required=True, help="stack whose settings to model (stacks/Pulumi.<stack>.yaml)")
    p.add_argument("--stack-file", type=Path, help="alternative stack config file")
    p.add_argument("--program", type=Path, help="directory holding Pulumi.yaml (default: this project)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run_stack)


def run_stack(args: argparse.Namespace) -> int:
    from inference_platform.errors import CommandError
    from inference_platform.planners import cold_start
    from inference_platform.settings import SettingsError, derived, stack_files

    try:
        settings = stack_files.load(args.stack, program_dir=args.program, stack_file=args.stack_file)
    except SettingsError as err:
        raise CommandError(f"stack {args.stack}: {err}", 2) from None
    except (OSError, ValueError) as err:
        raise CommandError(f"stack {args.stack}: {err}", 2) from None
    cs = derived.cold_start_model(settings)
    if cs is None:
        raise CommandError(f"stack {args.stack}: nothing rolls out (inference.image or serving.nodePool unset), so "
                           "there is no scale-up to model", 2)  # fmt: skip
    alternatives = _alternatives(cs)
    thresholds = derived.thresholds(settings)
    if args.json:
        out = cs.to_dict()
        out["alternatives"] = {name: alt.to_dict() for name, alt in alternatives.items()}
        out["notOffered"] = [{"name": o.name, "why": o.why, "source": o.source} for o in cold_start.NOT_OFFERED]
        out["targets"] = cold_start.target_lines(cs)
        out["thresholds"] = thresholds.to_dict() if thresholds is not None else None
        print(json.dumps(out, indent=2))
        return 0
    lines = [f"stack {args.stack}: {cs.inputs.instance_type}, {cs.inputs.model_gib:.1f} GiB of weights, "
             f"{cs.inputs.starts_at_once} replica(s) per scale-up period, {cs.inputs.pods_per_node} per node",
             *cold_start.text(cs), "", "options (each counted only where it takes effect; settings coldStart.*):"]  # fmt: skip
    for name, alt in alternatives.items():
        lines.append(f"  {name:<44} running node {alt.running_node_s / 60:5.1f} min, new node "
                     f"{alt.new_node_s / 60:5.1f} min (launch + {alt.after_launch_s / 60:.1f})"
                     + _standby_cost(settings, alt.inputs.standby_replicas)
                     + (_cache_cost(settings) if alt.inputs.image_pull == "cached" else ""))  # fmt: skip
    lines += [f"  {o.name:<44} not offered: {o.why} ({o.source})" for o in cold_start.NOT_OFFERED]
    lines += ["", *cold_start.target_lines(cs)]
    if thresholds is not None:
        from inference_platform.inferctl.cost.summary import thresholds_line

        lines += ["", thresholds_line(thresholds.to_dict())]
        lines += [f"  - {s.what}: {s.value} ({s.source})" for s in thresholds.steps]
    print("\n".join(lines))
    return 0


def _standby_cost(settings: Any, replicas: int) -> str:
    """What ``replicas`` standby placeholders hold, on demand, at the list price of the serving pool's first type (the
    plan's ``inferctl cost`` prices them like every workload pinned to the pool, zone by zone)."""
    from inference_platform.catalog import instances, prices

    if not replicas:
        return ""
    pool = settings.node_pools.root[settings.serving.node_pool]
    node = instances.instance(pool.instance_types[0])
    hour = prices.instance_hour(node.name, settings.region.name)
    if hour is None or not node.accelerator_count:
        return ""
    share = replicas * settings.serving.world_size / node.accelerator_count
    return f"; standby holds {share:g} {node.name} (~${share * hour * prices.HOURS_PER_MONTH:,.0f}/month on demand)"


def _cache_cost(settings: Any) -> str:
    """What the image cache adds a month: fast snapshot restore in each zone of the serving pool (the plan prices the
    FastSnapshotRestore resources and the nodes' cache volumes: ``inferctl cost``)."""
    from inference_platform.catalog import prices
    from inference_platform.settings.derived import cluster_zones

    cache = settings.cold_start.image_cache
    if cache is not None and not cache.fast_snapshot_restore:
        return "; no fast snapshot restore (initialization rate billed per volume created)"
    pool = settings.node_pools.root[settings.serving.node_pool]
    zones = len(pool.zones(cluster_zones(settings))) or 1
    month = zones * prices.fsr_month(settings.region.name)
    return f"; fast snapshot restore in {zones} zone(s) ~${month:,.0f}/month, plus a cache volume per node"


def _alternatives(cs: Any) -> dict[str, Any]:
    """The stack's start with each option flipped, for comparison (nothing here is rendered)."""
    from inference_platform.planners import cold_start

    i = cs.inputs
    out = {"as configured": cs}
    for other_pull in ("full", "parallel"):
        if other_pull != i.image_pull and (other_pull == "full" or cold_start.fast_image_pull_applies(i.instance_type)):
            out[f"imagePull {other_pull}"] = cold_start.model(replace(i, image_pull=other_pull))
    if i.image_pull != "cached":
        out["imagePull cached (fast snapshot restore)"] = cold_start.model(
            replace(i, image_pull="cached", cache_init_mib_s=None)
        )
    if i.source == "fsx":
        out["weights from S3 at concurrency 16"] = cold_start.model(replace(i, source="download",
                                                                          download_concurrency=16))  # fmt: skip
    elif i.download_concurrency != 32:
        out["downloadConcurrency 32"] = cold_start.model(replace(i, download_concurrency=32))
    standby = max(1, i.starts_at_once)
    if i.standby_replicas < standby:
        covered = cold_start.model(replace(i, standby_replicas=standby))
        out[f"standbyReplicas {standby} (scale-up {covered.scale_up_s / 60:.1f} min)"] = covered
    return out
