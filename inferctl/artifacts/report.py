"""Results of checking a version against its manifest: one ``Mismatch`` per bad file."""

from __future__ import annotations

from dataclasses import dataclass

from inferctl.artifacts.errors import IntegrityError, Mismatch
from inferctl.artifacts.manifest import Manifest


@dataclass(frozen=True)
class VerifyReport:
    """Outcome of ``verify``: ``ok`` when every manifest file matched."""

    uri: str
    manifest: Manifest
    mismatches: tuple[Mismatch, ...]
    by_s3_checksum: int
    """Files proven by the SHA-256 checksum S3 stored at upload (no data read)."""
    by_download: int
    """Files read back and hashed (no usable stored checksum, or ``deep``)."""

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def raise_for_mismatches(self) -> None:
        if self.mismatches:
            raise integrity_error(self.uri, len(self.manifest.files), self.mismatches)


def integrity_error(uri: str, total: int, mismatches: tuple[Mismatch, ...]) -> IntegrityError:
    """One summary line; it names the file itself when there is only one (else see ``mismatches``)."""
    summary = f"{len(mismatches)} of {total} files of {uri} do not match the manifest"
    if len(mismatches) == 1:
        summary += f": {mismatches[0]}"
    return IntegrityError(summary, mismatches)
