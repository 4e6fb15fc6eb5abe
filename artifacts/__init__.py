"""Model-artifact pipeline: versions on S3 described by a manifest of SHA-256s, verified end to end.

Stable Python API (the image entrypoint and the ``prepare`` job import these names)::

    upload(src_dir: Path, uri: str, metadata: ModelMetadata, *, force=False, session=None,
           progress=False, transfer=None) -> Manifest
    verify(uri: str, *, session=None, deep=False, progress=False, transfer=None,
           expected_manifest_sha256=None) -> VerifyReport
    download(uri: str, dest: Path, *, session=None, progress=False, transfer=None, deep=False,
             expected_manifest_sha256=None) -> Manifest

    ArtifactError      every failure, one line (subclass of inference_platform.errors.CommandError; exit 1)
    InvalidInputError  bad URI, metadata or settings (exit 2)
    IntegrityError     data differs from the manifest; ``.mismatches`` lists each file (exit 3)
    Manifest, ManifestFile, ModelMetadata, VerifyReport, Mismatch, TransferSettings

``uri`` is ``s3://bucket/models/<name>/<version>/``. ``session`` is an optional ``boto3.Session``;
without one the standard AWS chain applies (AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL for
S3-compatible stores, AWS_MAX_ATTEMPTS / AWS_RETRY_MODE). A version exists once its
``manifest.json`` does, which ``upload`` writes last. ``download`` writes ``.complete`` (holding
``Manifest.sha256``) into ``dest`` only after every file verified: load nothing without it. A
re-run checks each file against the identity recorded when it verified, and hashes it again if
anything changed (``deep`` hashes all). ``expected_manifest_sha256`` pins the version: a manifest
swapped with its files, or with an entry removed, is self-consistent and only a pin tells it apart.

Names resolve lazily so that ``inferctl --help`` does not import boto3.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inference_platform.artifacts.downloader import download
    from inference_platform.artifacts.errors import ArtifactError, IntegrityError, InvalidInputError, Mismatch
    from inference_platform.artifacts.manifest import Manifest, ManifestFile
    from inference_platform.artifacts.metadata import ModelMetadata
    from inference_platform.artifacts.report import VerifyReport
    from inference_platform.artifacts.transfer import TransferSettings
    from inference_platform.artifacts.uploader import upload
    from inference_platform.artifacts.verifier import verify

_EXPORTS = {
    "upload": "inference_platform.artifacts.uploader",
    "verify": "inference_platform.artifacts.verifier",
    "download": "inference_platform.artifacts.downloader",
    "ArtifactError": "inference_platform.artifacts.errors",
    "IntegrityError": "inference_platform.artifacts.errors",
    "InvalidInputError": "inference_platform.artifacts.errors",
    "Manifest": "inference_platform.artifacts.manifest",
    "ManifestFile": "inference_platform.artifacts.manifest",
    "ModelMetadata": "inference_platform.artifacts.metadata",
    "Mismatch": "inference_platform.artifacts.errors",
    "VerifyReport": "inference_platform.artifacts.report",
    "TransferSettings": "inference_platform.artifacts.transfer",
}
__all__ = [
    "ArtifactError",
    "IntegrityError",
    "InvalidInputError",
    "Manifest",
    "ManifestFile",
    "Mismatch",
    "ModelMetadata",
    "TransferSettings",
    "VerifyReport",
    "download",
    "upload",
    "verify",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
