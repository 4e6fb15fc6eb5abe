"""The model repository each stack's pods will load, rendered into the plan for reviewers.

Rendered from the same ``serving.json`` the rollout mounts (the plan's ConfigMap), read the way the
entrypoint reads it (``settings_source.load_file``) and rendered with the entrypoint's paths, so what
``build/plan/<stack>/model-repository/`` shows is what ``inferctl serve`` will write in the pod.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from inference_platform.offline_plan.manifests import is_object, manifest

SETTINGS_FILE = "serving.json"


def serving_json(resources: Iterable[Any]) -> str | None:
    """The ``serving.json`` of the plan's serving ConfigMap (None when the stack serves nothing)."""
    # Every serving pod (and multi-node worker) mounts one; they must carry the same settings.
    found = {
        doc["data"][SETTINGS_FILE]
        for doc in (manifest(r) for r in resources if is_object(r))
        if doc.get("kind") == "ConfigMap" and SETTINGS_FILE in (doc.get("data") or {})
    }
    if len(found) > 1:
        raise ValueError(f"the plan's ConfigMaps hold {len(found)} different {SETTINGS_FILE}; expected one")
    return next(iter(found), None)


def write_model_repository(resources: Iterable[Any], out_dir: Path) -> list[str]:
    """Replace ``out_dir`` with the rendered repository; returns the model names (none: nothing written)."""
    from inference_platform.inference_image.defaults import MODELS_DIR
    from inference_platform.inference_image.settings_source import load_file

    resources = list(resources)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    text = serving_json(resources)
    if text is None:
        return []
    with tempfile.TemporaryDirectory(prefix="inferctl-plan-") as tmp:
        settings = Path(tmp) / SETTINGS_FILE
        settings.write_text(text, encoding="utf-8")
        serving = load_file(settings)
    # The entrypoint's defaults: the verified artifacts under MODELS_DIR (EntrypointOptions).
    if serving.backend == "neuron":
        from inference_platform.inference_image.neuron.repository import render_repository

        return render_repository(
            serving, out_dir, compiled_dir=MODELS_DIR / "engine", tokenizer_dir=MODELS_DIR / "tokenizer"
        )
    from inference_platform.inference_image.llmapi.repository import render_pod_repository
    from inference_platform.inference_image.model_metrics import ttft_buckets_ms

    return render_pod_repository(
        serving,
        out_dir,
        models_dir=MODELS_DIR,
        host_memory_bytes=server_memory_bytes(resources),
        ttft_buckets_ms=ttft_buckets_ms(serving),
    )


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def server_memory_bytes(resources: Iterable[Any]) -> int | None:
    """The serving container's memory limit in the plan (the container given the served artifact,
    ``--engine-uri``): what its cgroup ``memory.max`` will read in the pod."""
    found: list[int] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for container in node.get("containers") or [] if isinstance(node.get("containers"), list) else []:
                words = [str(w) for w in (container.get("args") or []) + (container.get("command") or [])]
                limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
                if limit and any("--engine-uri" in w for w in words):
                    found.append(_quantity(str(limit)))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for doc in (manifest(r) for r in resources if is_object(r)):
        walk(doc)
    return min(found) if found else None


def _quantity(text: str) -> int:
    for suffix in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * _UNITS[suffix])
    return int(float(text))
