"""Results of checking a version against its manifest: one ``Mismatch`` per bad file."""

from __future__ import annotations

from dataclasses import dataclass

from inference_platform.artifacts.errors import IntegrityError, Mismatch
from inference_platform.artifacts.manifest import Manifest


@dataclass(frozen=True)
class VerifyReport:
    """Outcome of ``verify``: ``ok`` when every manifest file matched and nothing else is stored."""

    uri: str
    manifest: Manifest
    mismatches: tuple[Mismatch, ...]
    by_s3_checksum: int
    """Files proven by the SHA-256 checksum S3 stored at upload (no data read)."""
    by_download: int
    """Files read back and hashed (no usable stored checksum, or ``deep``)."""
    unlisted: tuple[Mismatch, ...] = ()
    """Objects under the version prefix that the manifest does not list (problem ``unlisted``):
    a published version is immutable, so anything beside its files was written in afterwards."""

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.unlisted

    def raise_for_mismatches(self) -> None:
        if not self.ok:
            raise integrity_error(self.uri, len(self.manifest.files), self.mismatches, self.unlisted)


def integrity_error(
    uri: str, total: int, mismatches: tuple[Mismatch, ...], unlisted: tuple[Mismatch, ...] = ()
) -> IntegrityError:
    """One summary line; it names the file itself when there is only one (else see ``mismatches``)."""
    parts = []
    if mismatches:
        parts.append(f"{len(mismatches)} of {total} files of {uri} do not match the manifest")
    if unlisted:
        parts.append(f"{len(unlisted)} object{'s' if len(unlisted) != 1 else ''} under {uri} not in the manifest")
    found = (*mismatches, *unlisted)
    summary = "; ".join(parts)
    if len(found) == 1:
        summary += f": {found[0]}"
    return IntegrityError(summary, found)
