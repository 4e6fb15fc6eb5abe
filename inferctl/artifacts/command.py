"""``inferctl artifacts upload|verify|download``: publish, check and fetch model versions on S3."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from inference_platform.artifacts.errors import IntegrityError
from inference_platform.artifacts.metadata import ACCELERATORS, PRECISIONS

if TYPE_CHECKING:
    from inference_platform.artifacts.transfer import TransferSettings

T = TypeVar("T")

_URI_HELP = "version location, s3://bucket/models/<name>/<version>/"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "artifacts",
        help="upload, verify and download model artifacts (S3 + manifest + SHA-256)",
        description=__doc__.splitlines()[0]
        + " AWS settings come from the usual chain: AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL, "
        "AWS_MAX_ATTEMPTS, AWS_RETRY_MODE.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    up = actions.add_parser("upload", help="publish DIR as a version; its manifest is written last")
    up.add_argument("src_dir", metavar="DIR", type=Path, help="local directory holding the version's files")
    up.add_argument("uri", metavar="URI", help=_URI_HELP)
    up.add_argument("--metadata", type=Path, help="JSON file of model metadata; flags below override it")
    up.add_argument("--architecture", help="model architecture, e.g. LlamaForCausalLM")
    up.add_argument("--precision", help=f"one of {', '.join(PRECISIONS)}")
    up.add_argument(
        "--tensor-parallel-size",
        "--tp",
        type=int,
        dest="tensor_parallel_size",
        help="tensor-parallel degree the engine was built for",
    )
    up.add_argument(
        "--pipeline-parallel-size",
        "--pp",
        type=int,
        dest="pipeline_parallel_size",
        help="pipeline-parallel degree the engine was built for",
    )
    up.add_argument("--accelerator", help=f"one of {', '.join(ACCELERATORS)}")
    up.add_argument("--accelerator-arch", help="e.g. sm90 or neuron-v2; defaults to the accelerator's")
    up.add_argument("--builder", help="e.g. tensorrt-llm")
    up.add_argument("--builder-version", help="e.g. 0.17.0")
    up.add_argument("--force", action="store_true", help="replace an existing version")
    _transfer_flags(up)
    up.set_defaults(handler=_upload)

    check = actions.add_parser("verify", help="check every object of a version against its manifest")
    check.add_argument("uri", metavar="URI", help=_URI_HELP)
    check.add_argument("--deep", action="store_true", help="read and hash every object, even when S3 holds a checksum")
    _pin_flag(check)
    _transfer_flags(check)
    check.set_defaults(handler=_verify)

    down = actions.add_parser("download", help="fetch and verify a version into DIR, then mark it complete")
    down.add_argument("uri", metavar="URI", help=_URI_HELP)
    down.add_argument("dest", metavar="DIR", type=Path, help="local directory to download into (marked complete last)")
    down.add_argument(
        "--deep",
        action="store_true",
        help="hash every local file again, even those whose recorded size, mtime, ctime and inode are unchanged",
    )
    _pin_flag(down)
    _transfer_flags(down)
    down.set_defaults(handler=_download)


def _pin_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--manifest-sha256",
        metavar="HEX",
        help="refuse the version unless its manifest has this SHA-256 (the one upload printed; stacks pin it "
        "in serving.artifacts.engineManifestSha256 / tokenizerManifestSha256)",
    )


def _transfer_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--concurrency", type=int, help="requests in flight (default 10)")
    parser.add_argument("--part-size-mib", type=int, help="multipart part size in MiB (default 16)")
    parser.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, help="progress bar on stderr (default: when a terminal)"
    )


def _upload(args: argparse.Namespace) -> int:
    from inference_platform.artifacts.metadata import load_metadata
    from inference_platform.artifacts.uploader import upload

    fields = (
        "architecture", "precision", "tensor_parallel_size", "pipeline_parallel_size",
        "accelerator", "accelerator_arch", "builder", "builder_version",
    )  # fmt: skip
    metadata = load_metadata(args.metadata, {name: getattr(args, name) for name in fields})
    manifest = upload(
        args.src_dir, args.uri, metadata, force=args.force, progress=_progress(args), transfer=_settings(args)
    )
    print(
        f"uploaded {len(manifest.files)} files ({_size(manifest.total_size)}) to {args.uri}; "
        f"manifest sha256 {manifest.sha256} (pin it in the stack's serving.artifacts)"
    )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from inference_platform.artifacts.verifier import verify

    report = verify(
        args.uri,
        deep=args.deep,
        progress=_progress(args),
        transfer=_settings(args),
        expected_manifest_sha256=args.manifest_sha256,
    )
    _raise_listing(report.raise_for_mismatches)
    print(
        f"verified {len(report.manifest.files)} files ({_size(report.manifest.total_size)}) of {report.uri}: "
        f"{report.by_s3_checksum} by S3 checksum, {report.by_download} by reading them back"
    )
    return 0


def _download(args: argparse.Namespace) -> int:
    from inference_platform.artifacts.downloader import download

    manifest = _raise_listing(
        lambda: download(
            args.uri,
            args.dest,
            progress=_progress(args),
            transfer=_settings(args),
            deep=args.deep,
            expected_manifest_sha256=args.manifest_sha256,
        )
    )
    print(
        f"{args.dest} holds the verified {len(manifest.files)} files ({_size(manifest.total_size)}) of "
        f"{args.uri}; marked complete (manifest sha256 {manifest.sha256})"
    )
    return 0


def _raise_listing(action: Callable[[], T]) -> T:
    """Run ``action``; on several mismatches print one line each before the summary line."""
    try:
        return action()
    except IntegrityError as err:
        if len(err.mismatches) > 1:
            for mismatch in err.mismatches:
                print(f"  {mismatch}", file=sys.stderr)
        raise


def _settings(args: argparse.Namespace) -> TransferSettings:
    from inference_platform.artifacts.transfer import MIB, TransferSettings

    overrides = {}
    if args.concurrency is not None:
        overrides["max_concurrency"] = args.concurrency
    if args.part_size_mib is not None:
        overrides["part_size"] = args.part_size_mib * MIB
    return TransferSettings(**overrides)


def _progress(args: argparse.Namespace) -> bool:
    return sys.stderr.isatty() if args.progress is None else args.progress


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    units, value, i = ("KiB", "MiB", "GiB", "TiB"), n / 1024, 0
    while value >= 1024 and i < len(units) - 1:
        value, i = value / 1024, i + 1
    return f"{value:.1f} {units[i]}"
