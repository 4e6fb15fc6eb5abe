"""The weights download code, timed: ``inferctl artifacts download`` from the local S3 emulator, and SHA-256 per core.

A test of the download code, not a rate the cold-start model uses: the model takes S3, EC2, FSx, EBS and instance-store
rates from published figures (catalog/transfer_rates.py). A synthetic engine (``--shards`` x 480 MiB plus
tokenizer/config files) is uploaded once through ``inference_platform.artifacts.upload`` to a ThreadedMotoServer on
127.0.0.1, then downloaded ``--repetitions`` times through ``inference_platform.artifacts.download`` (parallel ranged
GETs, SHA-256 of every byte, atomic writes, completion marker) into a fresh directory each time. It also hashes
64 MiB buffers with hashlib's SHA-256 on one thread: the figure beside catalog/transfer_rates.py SHA256_PER_CORE
(the download hashes each file on one thread as it lands, up to four files at once). Medians and conditions go to ``build/bench/cold-start.json``.

What it measures: the artifacts library on this machine (moto shares the process's GIL and serves every
ranged GET by reading the whole object), not S3 or a node's network.
"""

from __future__ import annotations

import argparse
import hashlib
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
from inference_platform.catalog.transfer_rates import SHA256_PER_CORE

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
    hashing = _sha256_mib_s()
    conditions = (
        f"median of {args.repetitions} downloads of {total / MIB:,.0f} MiB through inference_platform.artifacts.download "
        f"from moto {moto.__version__} ThreadedMotoServer on 127.0.0.1, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
    )
    result = {"s3DownloadMiBps": round(median, 1), "samplesMiBps": [round(r, 1) for r in rates],
              "sha256MiBpsPerCore": round(hashing, 1), "bytes": total, "conditions": conditions}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"weights download from the local S3 emulator: {median:,.0f} MiB/s; SHA-256 on one core {hashing:,.0f} MiB/s "
          f"(the model assumes {SHA256_PER_CORE.value:g}) ({conditions}); written to {args.out}")  # fmt: skip
    return 0


def _sha256_mib_s(rounds: int = 8) -> float:
    """hashlib SHA-256 of 64 MiB buffers on this thread, the median MiB/s of ``rounds``."""
    data = os.urandom(64 * MIB)
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        hashlib.sha256(data).digest()
        out.append(64 / (time.perf_counter() - start))
    return statistics.median(out)
