"""The manifest of a model version: every file with its size and SHA-256, plus the build metadata.

It is the trust root of a version: uploaded last (a version without it does not exist), checked
before anything is served, and stored canonically (sorted keys) so its SHA-256 names the version.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from inference_platform.artifacts.errors import ArtifactError, IntegrityError, InvalidInputError
from inference_platform.artifacts.metadata import ModelMetadata

SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"
COMPLETE_MARKER = ".complete"
STAGING_DIR = ".inferctl-download"
"""Names a download writes beside the model files; no manifest entry may use them."""

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_COMPOSITE_RE = re.compile(r"^[A-Za-z0-9+/]{43}=-[1-9][0-9]{0,4}$")
_MAX_PATH_BYTES = 900  # S3 keys hold 1024 bytes; leave room for the models/<name>/<version>/ prefix


@dataclass(frozen=True)
class ManifestFile:
    """One file of a version, ``path`` relative to the version root with ``/`` separators."""

    path: str
    size: int
    sha256: str
    """Lower-case hex SHA-256 of the whole file."""
    composite_sha256: str | None = None
    """For files uploaded in parts: the checksum S3 stores for them (base64 SHA-256 over the part
    digests, ``-<parts>``), so ``verify`` can trust S3 without downloading. ``None`` for single-part."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "size": self.size, "sha256": self.sha256}
        if self.composite_sha256 is not None:
            data["composite_sha256"] = self.composite_sha256
        return data


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """A whole version. Construction checks every rule and raises ``InvalidInputError`` naming each."""

    files: tuple[ManifestFile, ...]
    metadata: ModelMetadata
    created_at: str
    """UTC creation time, ISO 8601 with a ``Z`` suffix."""
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", tuple(sorted(self.files, key=lambda f: f.path)))
        problems = _problems(self)
        if problems:
            raise InvalidInputError("invalid manifest: " + "; ".join(problems))

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @functools.cached_property
    def sha256(self) -> str:
        """Hex SHA-256 of the canonical JSON: the identity a completed download records."""
        return hashlib.sha256(self.to_json()).hexdigest()

    def to_json(self) -> bytes:
        data = {
            "schema_version": self.schema_version,
            "created_at": self.created_at,
            "model": self.metadata.to_dict(),
            "files": [f.to_dict() for f in self.files],
        }
        return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, data: bytes, *, source: str) -> Manifest:
        """Parse stored bytes; a damaged manifest is an ``IntegrityError`` naming ``source``."""
        try:
            doc = json.loads(data)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            version = doc.get("schema_version")
            if isinstance(version, int) and version > SCHEMA_VERSION:
                raise ArtifactError(
                    f"manifest {source} has schema_version {version}; this inferctl reads up to "
                    f"{SCHEMA_VERSION}: upgrade inferctl"
                )
            unknown = set(doc) - {"schema_version", "created_at", "model", "files"}
            if unknown:
                raise ValueError(f"unknown keys {sorted(unknown)}")
            files = tuple(_file_from_dict(entry) for entry in doc["files"])
            metadata = ModelMetadata.from_dict(doc["model"], source="model")
            return cls(
                files=files,
                metadata=metadata,
                created_at=doc["created_at"],
                schema_version=cast(int, version),  # anything but SCHEMA_VERSION fails _problems
            )
        except ArtifactError as err:
            if not isinstance(err, InvalidInputError):
                raise
            raise IntegrityError(f"manifest {source} is invalid: {err}") from None
        except (ValueError, KeyError, TypeError) as err:
            detail = f"missing key {err}" if isinstance(err, KeyError) else str(err)
            raise IntegrityError(f"manifest {source} is invalid: {detail}") from None


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_relative_path(path: str) -> str | None:
    """Why ``path`` cannot name a file of a version (it must stay inside the target directory)."""
    if not isinstance(path, str) or not path:
        return "path must be a non-empty string"
    if path.startswith("/") or "\\" in path or any(ord(c) < 32 for c in path):
        return f"path {path!r} must be relative, with '/' separators and no control characters"
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return f"path {path!r} must not contain empty, '.' or '..' segments"
    if path in (MANIFEST_NAME, COMPLETE_MARKER) or parts[0] == STAGING_DIR:
        return f"path {path!r} is reserved for the manifest and download bookkeeping"
    if len(path.encode()) > _MAX_PATH_BYTES:
        return f"path {path[:40]!r}... is longer than {_MAX_PATH_BYTES} bytes"
    return None


def _file_from_dict(entry: Any) -> ManifestFile:
    if not isinstance(entry, dict):
        raise ValueError("every files[] entry must be an object")
    unknown = set(entry) - {"path", "size", "sha256", "composite_sha256"}
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)} in files[] entry")
    return ManifestFile(entry["path"], entry["size"], entry["sha256"], entry.get("composite_sha256"))


def _problems(manifest: Manifest) -> list[str]:
    problems = []
    if manifest.schema_version != SCHEMA_VERSION:
        problems.append(f"schema_version must be {SCHEMA_VERSION}")
    try:
        if not manifest.created_at.endswith("Z"):
            raise ValueError
        datetime.fromisoformat(manifest.created_at)
    except (ValueError, AttributeError):
        problems.append(f"created_at {manifest.created_at!r} is not an ISO 8601 UTC time ending in Z")
    if not manifest.files:
        problems.append("a version needs at least one file")
    paths = {f.path for f in manifest.files if isinstance(f.path, str)}
    if len(paths) != len(manifest.files):
        problems.append("file paths must be unique strings")
    for f in manifest.files:
        problem = check_relative_path(f.path)
        if problem is None and any(p in paths for p in _parents(f.path)):
            problem = f"path {f.path!r} lies under another file's path"
        if type(f.size) is not int or f.size < 0:
            problem = problem or f"{f.path}: size must be an integer >= 0"
        if not isinstance(f.sha256, str) or not _SHA256_RE.match(f.sha256):
            problem = problem or f"{f.path}: sha256 must be 64 lower-case hex digits"
        if f.composite_sha256 is not None and not (
            isinstance(f.composite_sha256, str) and _COMPOSITE_RE.match(f.composite_sha256)
        ):
            problem = problem or f"{f.path}: composite_sha256 must look like '<base64>-<parts>'"
        if problem:
            problems.append(problem)
    return problems


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]
