"""How artifacts move: part size, concurrency and retries, handed to boto3's transfer manager."""

from __future__ import annotations

from dataclasses import dataclass

from boto3.s3.transfer import TransferConfig
from s3transfer.utils import ChunksizeAdjuster

from inference_platform.artifacts.errors import InvalidInputError

MIB = 1024 * 1024
DEFAULT_PART_SIZE = 16 * MIB
"""AWS's S3 performance guide suggests 8-16 MB ranges; 16 MiB keeps a 5 GiB shard at 320 parts
and a 150 GiB file under S3's 10,000-part cap (s3transfer enlarges parts beyond that)."""
DEFAULT_MAX_CONCURRENCY = 10
DEFAULT_MAX_ATTEMPTS = 10
"""Total attempts per request when neither AWS_MAX_ATTEMPTS nor the profile sets one: S3 answers
bursts of parallel part requests with SlowDown, and botocore's default of 3 gives up too soon."""
_MIN_PART_SIZE = 5 * MIB  # S3's minimum for every part but the last


@dataclass(frozen=True, kw_only=True)
class TransferSettings:
    """Tuning of one upload/verify/download; the defaults suit multi-GiB engines on S3."""

    part_size: int = DEFAULT_PART_SIZE
    """Bytes per part of a multipart transfer (>= 5 MiB); files of at least this size go in parts."""
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    """Requests in flight at once, across all files of the version (>= 1)."""
    max_attempts: int | None = None
    """Total attempts per request; None takes AWS_MAX_ATTEMPTS / the profile, else DEFAULT_MAX_ATTEMPTS."""

    def __post_init__(self) -> None:
        problems = []
        if type(self.part_size) is not int or self.part_size < _MIN_PART_SIZE:
            problems.append(f"part size must be at least {_MIN_PART_SIZE // MIB} MiB (got {self.part_size!r})")
        if type(self.max_concurrency) is not int or self.max_concurrency < 1:
            problems.append(f"concurrency must be an integer >= 1 (got {self.max_concurrency!r})")
        if self.max_attempts is not None and (type(self.max_attempts) is not int or self.max_attempts < 1):
            problems.append(f"max attempts must be an integer >= 1 (got {self.max_attempts!r})")
        if problems:
            raise InvalidInputError("invalid transfer settings: " + "; ".join(problems))

    def transfer_config(self) -> TransferConfig:
        # "classic" pins s3transfer: the CRT manager (used when awscrt happens to be installed)
        # picks its own part sizes, which would break the composite checksums in the manifest.
        return TransferConfig(
            multipart_threshold=self.part_size,
            multipart_chunksize=self.part_size,
            max_concurrency=self.max_concurrency,
            preferred_transfer_client="classic",
        )

    def upload_part_size(self, size: int) -> int | None:
        """Part size s3transfer will use for a file of ``size`` bytes, or None for a single PUT."""
        if size < self.part_size:
            return None
        return ChunksizeAdjuster().adjust_chunksize(self.part_size, size)
