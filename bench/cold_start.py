"""Weights load for the cold-start model: ``inferctl artifacts download`` from the local S3 emulator, in MiB/s.

A synthetic engine (``--shards`` x 480 MiB plus tokenizer/config files) is uploaded once through
``inference_platform.artifacts.upload`` to a ThreadedMotoServer on 127.0.0.1, then downloaded ``--repetitions``
times through ``inference_platform.artifacts.download`` (parallel ranged GETs, SHA-256 of every byte, atomic
writes, completion marker) into a fresh directory each time. The median MiB/s, with the conditions it was
measured under, is printed and written to ``build/bench/cold-start.json``; planners/cold_start.py
``S3_MEASURED`` records the figure the plan uses (update it from this file when you re-measure).

What it measures: the artifacts library on this machine (moto shares the process's GIL and serves every
ranged GET by reading the whole object), not S3 or a node's network. The cold-start model takes the
smaller of this and the node's network.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.artifacts import MIB, _synthetic_model, local_s3

OUT = Path("build/bench/cold-start.json")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench cold-start", description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=2, help="number of 480 MiB shards (default 2)")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    import boto3
    import moto

    from inference_platform.artifacts import ModelMetadata, download, upload

    rates: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-cold-start-") as tmp:
        root = Path(tmp)
        src = _synthetic_model(root / "src", args.shards)
        total = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
        with local_s3():
            session = boto3.Session()
            session.client("s3").create_bucket(Bucket="bench-cold-start")
            uri = "s3://bench-cold-start/models/engine/v1/"
            metadata = ModelMetadata(
                architecture="LlamaForCausalLM", precision="fp8", accelerator="nvidia-h100",
                builder="tensorrt-llm", builder_version="0.17.0",
            )  # fmt: skip
            upload(src, uri, metadata, session=session)
            for rep in range(args.repetitions):
                dest = root / f"dest-{rep}"
                start = time.perf_counter()
                download(uri, dest, session=session)
                rates.append(total / MIB / (time.perf_counter() - start))
                shutil.rmtree(dest)
                print(f"  repetition {rep + 1}/{args.repetitions}: {rates[-1]:,.0f} MiB/s", flush=True)
    median = statistics.median(rates)
    conditions = (
        f"median of {args.repetitions} downloads of {total / MIB:,.0f} MiB through inference_platform.artifacts.download "
        f"from moto {moto.__version__} ThreadedMotoServer on 127.0.0.1, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
    )
    result = {"s3DownloadMiBps": round(median, 1), "samplesMiBps": [round(r, 1) for r in rates],
              "bytes": total, "conditions": conditions}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"weights load from S3 (local emulator): {median:,.0f} MiB/s ({conditions}); written to {args.out}")
    return 0
