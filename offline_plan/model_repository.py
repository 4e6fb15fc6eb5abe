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
    # The serving pods and the engine-build Job each mount one; they must carry the same settings.
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
    from inference_platform.inference_image.repository import render_repository
    from inference_platform.inference_image.settings_source import load_file

    if out_dir.exists():
        shutil.rmtree(out_dir)
    text = serving_json(resources)
    if text is None:
        return []
    with tempfile.TemporaryDirectory(prefix="inferctl-plan-") as tmp:
        settings = Path(tmp) / SETTINGS_FILE
        settings.write_text(text, encoding="utf-8")
        serving = load_file(settings)
    # The entrypoint's defaults: engine and tokenizer under MODELS_DIR (EntrypointOptions).
    return render_repository(serving, out_dir, engine_dir=MODELS_DIR / "engine", tokenizer_dir=MODELS_DIR / "tokenizer")
