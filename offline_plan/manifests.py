"""Writes every Kubernetes object the plan recorded as a YAML manifest (one file per object).

pulumi-kubernetes resources carry their manifest as inputs (apiVersion, kind, metadata, spec, ...),
so the file is what the provider would send to the API server, secrets redacted. Helm releases are
not objects; they are listed in the plan JSON instead.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from inference_platform.offline_plan.recorder import RecordedResource
from inference_platform.offline_plan.redact import redact

_NOT_OBJECTS = ("kubernetes:helm.sh/", "kubernetes:yaml", "pulumi:providers:")
_PROVIDER_ONLY_KEYS = frozenset({"__inputs", "__meta"})


def _integral(value: Any) -> Any:
    """Protobuf carries every number as a float; Kubernetes int fields want ``8000``, not ``8000.0``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def is_object(resource: RecordedResource) -> bool:
    return resource.custom and resource.type.startswith("kubernetes:") and not resource.type.startswith(_NOT_OBJECTS)


def manifest(resource: RecordedResource) -> dict[str, Any]:
    group_version, kind = resource.type.split(":", 1)[1].rsplit(":", 1)
    group, _, version = group_version.rpartition("/")
    api_version = version if group in ("core", "") else f"{group}/{version}"
    body = {k: v for k, v in _integral(redact(resource.inputs, keep_keys=True)).items() if k not in _PROVIDER_ONLY_KEYS}
    body.setdefault("apiVersion", api_version)
    body.setdefault("kind", kind)
    ordered = {"apiVersion": body.pop("apiVersion"), "kind": body.pop("kind")}
    if "metadata" in body:
        ordered["metadata"] = body.pop("metadata")
    return {**ordered, **body}


def write_manifests(resources: Iterable[RecordedResource], out_dir: Path) -> list[Path]:
    """Replace ``out_dir`` with one YAML file per Kubernetes object; returns the files written."""
    objects = [r for r in resources if is_object(r)]
    if out_dir.exists():
        shutil.rmtree(out_dir)
    written = []
    for resource in objects:
        doc = manifest(resource)
        meta = doc.get("metadata") or {}
        parts = [doc["kind"], meta.get("namespace") or "", meta.get("name") or resource.name]
        path = out_dir / (re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(p for p in parts if p)).lower() + ".yaml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        written.append(path)
    return written
