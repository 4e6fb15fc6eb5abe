"""Artifact pipeline throughput: ``inferctl artifacts`` versus boto3's transfer-manager defaults.

A ~2 GiB synthetic engine (4 x 480 MiB shards plus tokenizer/config files) goes to a
ThreadedMotoServer on 127.0.0.1. Per repetition and operation, ours and the baseline run back to
back in the same process (who goes first alternates); the table shows medians and ours/baseline.

Baseline = what a script does with plain boto3: ``client.upload_file`` / ``download_file`` per
file, sequentially, default TransferConfig (8 MiB parts, 10 threads); its verify downloads each
file and hashes it, and is the reference for both of our verify rows. Ours = ``upload`` (hash,
multipart with SHA-256 checksums, manifest last), ``verify`` (S3's stored checksums; ``--deep``
streams and hashes every object) and ``download`` (parallel, hashed, atomic, marked complete).

moto is not S3: it decodes each streamed upload part by repeated bytes concatenation (cost grows
with the part size), serves every ranged GET by reading the whole object (cost grows with the
number of ranges) and shares this process's GIL. Bigger parts therefore lose on upload and win on
download here, which S3 does not do; ``--part-size-mib 8`` runs ours at the baseline's part size to
tell design from part size.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MIB = 1024 * 1024
_SHARD_MIB = 480
_VERIFY = "verify"
_DEEP = "verify --deep"
_SMALL_FILES = {
    "config.json": 4 * 1024,
    "generation_config.json": 512,
    "tokenizer/tokenizer.json": 9 * MIB,
    "tokenizer/tokenizer_config.json": 50 * 1024,
    "tokenizer/special_tokens_map.json": 512,
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench artifacts", description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=4, help=f"number of {_SHARD_MIB} MiB shards (default 4)")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--part-size-mib", type=int, help="our part size (default: inferctl's default)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-artifacts-") as tmp:
        root = Path(tmp)
        src = _synthetic_model(root / "src", args.shards)
        total = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
        with local_s3():
            samples = _run(src, root, total, args.repetitions, args.part_size_mib)
    _print_table(samples, total, args.repetitions, args.part_size_mib)
    return 0


def _run(src: Path, root: Path, total: int, repetitions: int, part_size_mib: int | None):
    import boto3

    session = boto3.Session()
    client = session.client("s3")
    files = sorted(p for p in src.rglob("*") if p.is_file())
    digests = {p: _sha256(p) for p in files}
    samples: dict[str, dict[str, list[float]]] = {}
    for rep in range(repetitions):
        bucket = f"bench-{rep}"
        client.create_bucket(Bucket=bucket)
        bench = _Pair(session, client, bucket, src, files, digests, root, part_size_mib)
        for ours_ops, ours, base_ops, base in bench.steps():
            runs = [("ours", ours_ops, ours), ("baseline", base_ops, base)]
            # Alternate who goes first, so warm caches and moto's growing heap favour neither side.
            for who, ops, action in runs if rep % 2 == 0 else reversed(runs):
                if action is None:
                    continue
                start = time.perf_counter()
                action()
                rate = total / MIB / (time.perf_counter() - start)
                for op in ops:
                    samples.setdefault(op, {}).setdefault(who, []).append(rate)
        for path in (root / "ours", root / "base", root / "scratch"):
            shutil.rmtree(path, ignore_errors=True)
        _empty_bucket(client, bucket)  # moto holds objects until deleted: free them between reps
        print(f"  repetition {rep + 1}/{repetitions} done", flush=True)
    return samples


class _Pair:
    """One repetition's actions: ours through the inference_platform.artifacts API, the baseline plain boto3."""

    def __init__(self, session, client, bucket, src: Path, files, digests, root: Path, part_size_mib) -> None:
        from inference_platform.artifacts import TransferSettings

        self.session, self.client, self.bucket = session, client, bucket
        self.src, self.files, self.digests, self.root = src, files, digests, root
        self.ours, self.base = f"s3://{bucket}/models/bench/ours/", "models/bench/base/"
        self.transfer = TransferSettings(part_size=part_size_mib * MIB) if part_size_mib else None

    def steps(self):
        return [
            (("upload",), self.upload, ("upload",), self.baseline_upload),
            ((_VERIFY,), self.verify, (_VERIFY, _DEEP), self.baseline_verify),
            ((_DEEP,), self.verify_deep, (), None),
            (("download",), self.download, ("download",), self.baseline_download),
        ]

    def upload(self) -> None:
        from inference_platform.artifacts import ModelMetadata, upload

        metadata = ModelMetadata(
            architecture="LlamaForCausalLM", precision="fp8", accelerator="nvidia-h100",
            builder="tensorrt-llm", builder_version="0.17.0",
        )  # fmt: skip
        upload(self.src, self.ours, metadata, session=self.session, transfer=self.transfer)

    def verify(self) -> None:
        from inference_platform.artifacts import verify

        _require(verify(self.ours, session=self.session, transfer=self.transfer).ok)

    def verify_deep(self) -> None:
        from inference_platform.artifacts import verify

        _require(verify(self.ours, session=self.session, transfer=self.transfer, deep=True).ok)

    def download(self) -> None:
        from inference_platform.artifacts import download

        download(self.ours, self.root / "ours", session=self.session, transfer=self.transfer)

    def baseline_upload(self) -> None:
        for p in self.files:
            self.client.upload_file(str(p), self.bucket, self.base + _rel(self.src, p))

    def baseline_verify(self) -> None:
        scratch = self.root / "scratch"
        scratch.mkdir(exist_ok=True)
        for p in self.files:
            self.client.download_file(self.bucket, self.base + _rel(self.src, p), str(scratch / "file"))
            _require(_sha256(scratch / "file") == self.digests[p])
            (scratch / "file").unlink()

    def baseline_download(self) -> None:
        for p in self.files:
            target = self.root / "base" / _rel(self.src, p)
            target.parent.mkdir(parents=True, exist_ok=True)
            self.client.download_file(self.bucket, self.base + _rel(self.src, p), str(target))


def _empty_bucket(client, bucket: str) -> None:
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for obj in page.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=obj["Key"])
    client.delete_bucket(Bucket=bucket)


def _synthetic_model(root: Path, shards: int) -> Path:
    # Random blocks reused with a per-block counter: fast to write, and no two blocks are equal.
    block = bytearray(os.urandom(8 * MIB))
    for i in range(shards):
        path = root / "engine" / f"rank{i}.engine"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            for n in range(_SHARD_MIB // 8):
                block[:8] = (i * 1_000_000 + n).to_bytes(8, "little")
                out.write(block)
    for rel, size in _SMALL_FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(os.urandom(size))
    return root


@contextmanager
def local_s3() -> Iterator[None]:
    """A ThreadedMotoServer on 127.0.0.1 for the duration, with the AWS chain pointed at it; stopped after."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access-log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        with _fake_aws(f"http://{host}:{port}"):
            yield
    finally:
        server.stop()


@contextmanager
def _fake_aws(endpoint: str) -> Iterator[None]:
    """Point the AWS chain at the local server with throwaway credentials, then restore it."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    for key in saved:
        del os.environ[key]
    os.environ.update(
        AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
        AWS_REGION="us-east-1", AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
    )  # fmt: skip
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith("AWS_")]:
            del os.environ[key]
        os.environ.update(saved)


def _print_table(samples: dict[str, dict[str, list[float]]], total: int, repetitions: int, part_mib) -> None:
    from inference_platform.artifacts.transfer import DEFAULT_PART_SIZE

    parts = f"ours {part_mib or DEFAULT_PART_SIZE // MIB} MiB parts, baseline 8 MiB"
    print(f"artifact {total / MIB:,.0f} MiB; medians of {repetitions} repetitions; {parts}")
    print(f"{'operation':<24}{'ours MiB/s':>12}{'baseline MiB/s':>16}{'ours/baseline':>15}")
    for op, by in samples.items():
        ours = statistics.median(by["ours"])
        base = statistics.median(by["baseline"])
        print(f"{op:<24}{ours:>12,.0f}{base:>16,.0f}{ours / base:>14.2f}x")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(8 * MIB):
            digest.update(chunk)
    return digest.hexdigest()


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _require(ok: bool) -> None:
    if not ok:
        raise SystemExit("benchmark check failed: data did not verify")
