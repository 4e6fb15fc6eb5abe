"""The cold start of a ``capacity plan`` option (planners/cold_start.py), for text and JSON.

Without a stack, the plan cannot know the provisioner or where the weights come from: flags say it
(``--provisioner``, ``--model-source``, ``--fsx-mb-s``), and the node's NVMe disks are used when the
instance type has them (what the stacks' ``nodePools.<pool>.localStorage: auto`` does).
"""

from __future__ import annotations

import argparse
from typing import Any

GIB = 2**30


def add_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--provisioner", choices=("managed", "karpenter"), default="managed",
                   help="who launches nodes, for the cold start (default managed: cluster autoscaler)")  # fmt: skip
    p.add_argument("--model-source", choices=("download", "fsx"), default="download",
                   help="where weights come from on a cold start (default download from S3)")  # fmt: skip
    p.add_argument("--fsx-mb-s", type=float, default=None, help="FSx throughput (MB/s) with --model-source fsx")
    p.add_argument("--ramp-percent-per-hour", type=float, default=100.0,
                   help="fastest planned rise of the load, %% of itself per hour (default 100): the headroom a "
                        "cold start needs")  # fmt: skip


def checks(args: argparse.Namespace) -> list[tuple[str, bool, str]]:
    fsx = args.fsx_mb_s
    return [
        ("--fsx-mb-s", args.model_source != "fsx" or (fsx is not None and fsx > 0),
         f"got {fsx}; --model-source fsx needs the file system's throughput (MB/s > 0)"),
        ("--ramp-percent-per-hour", args.ramp_percent_per_hour >= 0,
         f"got {args.ramp_percent_per_hour:g}; expected >= 0"),
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
        model_gib=models.weight_bytes(replica.model, replica.precision) / GIB,
        source=args.model_source,
        fsx_mb_s=args.fsx_mb_s,
        pods_per_node=option.replicas_per_node,
        local_nvme=bool(d and d.nvme_count),
        ebs_mib_s=cold_start.GP3_MAX_MIB_S,
        copy_streams=cold_start.PARALLEL_COPY_STREAMS,
    )
    return cold_start.model(inputs)


def as_json(cs: Any, ramp_percent_per_hour: float) -> dict[str, Any]:
    from inference_platform.planners import cold_start

    out = cs.to_dict()
    out["rampPercentPerHour"] = ramp_percent_per_hour
    out["maxTargetShare"] = round(cold_start.max_target_share(cs.new_node_s, ramp_percent_per_hour / 100), 3)
    return out


def as_text(cs: Any, ramp_percent_per_hour: float) -> str:
    from inference_platform.planners import cold_start

    share = cold_start.max_target_share(cs.new_node_s, ramp_percent_per_hour / 100)
    lines = cold_start.text(cs)
    lines.append(
        f"  headroom: at a ramp of {ramp_percent_per_hour:g} %/h, scale out by {1 - share:.0%} below a replica's "
        f"batch (target at most {share:.0%} of it)"
    )
    return "\n".join(lines)
