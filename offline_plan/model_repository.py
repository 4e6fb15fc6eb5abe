"""The model repository each stack's pods will load, rendered into the plan for reviewers.

Rendered from the same ``serving.json`` the rollout mounts (the plan's ConfigMap), read the way the
entrypoint reads it (``settings_source.load_file``) and rendered with the entrypoint's paths, so what
``build/plan/<stack>/model-repository/`` shows is what ``inferctl serve`` will write in the pod.

A stack serving several models (``inference-platform:models``) has a rollout, and a ConfigMap, per model version
(``<app>-serving-<digest>``, components/serving/inference_service.py): the stack's own model's repository is
``model-repository/``, each other rollout's ``model-repository-<app>/`` beside it, each rendered for the memory
of the pods that mount it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference_platform.offline_plan.manifests import is_object, manifest
from inference_platform.settings.models import PRIMARY_SERVICE

SETTINGS_FILE = "serving.json"
_SERVING = "-serving-"


@dataclass(frozen=True)
class Rollout:
    """One rollout's serving settings as its pods mount them, and their serving container's memory limit."""

    app: str
    serving_json: str
    memory_bytes: int | None


def rollouts(resources: Iterable[Any]) -> list[Rollout]:
    """Each rollout of the plan (its ConfigMap ``<app>-serving-<digest>``), the stack's own first."""
    docs = [manifest(r) for r in resources if is_object(r)]
    texts = {
        doc["metadata"]["name"]: doc["data"][SETTINGS_FILE]
        for doc in docs
        if doc.get("kind") == "ConfigMap" and SETTINGS_FILE in (doc.get("data") or {})
    }
    memory: dict[str, list[int]] = {}
    for doc in docs:
        for pod in _pod_specs(doc):
            mounted = [
                v["configMap"]["name"]
                for v in pod.get("volumes") or []
                if (v.get("configMap") or {}).get("name") in texts
            ]
            limits = _serving_limits(pod)
            for name in mounted:
                memory.setdefault(name, []).extend(limits)
    by_app: dict[str, Rollout] = {}
    for name, text in sorted(texts.items()):
        app = name.rsplit(_SERVING, 1)[0] if _SERVING in name else name
        found = memory.get(name, [])
        rollout = Rollout(app=app, serving_json=text, memory_bytes=min(found) if found else None)
        if app in by_app and by_app[app].serving_json != text:
            # Every pod of one rollout (and a multi-node worker) mounts the same settings.
            raise ValueError(f"rollout {app}: its ConfigMaps hold different {SETTINGS_FILE}; expected one")
        by_app.setdefault(app, rollout)
    return sorted(by_app.values(), key=lambda r: (r.app != PRIMARY_SERVICE, r.app))


def serving_json(resources: Iterable[Any]) -> str | None:
    """The ``serving.json`` of the stack's own rollout (None when the stack serves nothing)."""
    found = rollouts(resources)
    return found[0].serving_json if found else None


def write_model_repository(resources: Iterable[Any], out_dir: Path) -> list[str]:
    """Replace ``out_dir`` (and its ``<out_dir>-<app>`` siblings) with the rendered repositories; returns the model
    names written (none: nothing written)."""
    resources = list(resources)
    for old in [out_dir, *out_dir.parent.glob(f"{out_dir.name}-*")]:
        if old.is_dir():
            shutil.rmtree(old)
    names: list[str] = []
    for i, rollout in enumerate(rollouts(resources)):
        target = out_dir if i == 0 else out_dir.with_name(f"{out_dir.name}-{rollout.app}")
        names += _render(rollout, target)
    return names


def _render(rollout: Rollout, out_dir: Path) -> list[str]:
    from inference_platform.inference_image.defaults import MODELS_DIR
    from inference_platform.inference_image.settings_source import load_file

    with tempfile.TemporaryDirectory(prefix="inferctl-plan-") as tmp:
        settings = Path(tmp) / SETTINGS_FILE
        settings.write_text(rollout.serving_json, encoding="utf-8")
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
        host_memory_bytes=rollout.memory_bytes,
        ttft_buckets_ms=ttft_buckets_ms(serving),
    )


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def server_memory_bytes(resources: Iterable[Any]) -> int | None:
    """The serving containers' smallest memory limit in the plan (the container given the served artifact,
    ``--engine-uri``): what its cgroup ``memory.max`` will read in the pod."""
    found = [limit for doc in (manifest(r) for r in resources if is_object(r)) for pod in _pod_specs(doc)
             for limit in _serving_limits(pod)]  # fmt: skip
    return min(found) if found else None


def _pod_specs(node: Any) -> Iterable[dict[str, Any]]:
    """Every object holding ``containers`` (a pod spec) in a manifest, however deep (Deployment, LeaderWorkerSet)."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield node
        for value in node.values():
            yield from _pod_specs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _pod_specs(value)


def _serving_limits(pod: dict[str, Any]) -> list[int]:
    """The memory limits of a pod spec's serving containers (those given ``--engine-uri``)."""
    out = []
    for container in pod["containers"]:
        words = [str(w) for w in (container.get("args") or []) + (container.get("command") or [])]
        limit = ((container.get("resources") or {}).get("limits") or {}).get("memory")
        if limit and any("--engine-uri" in w for w in words):
            out.append(_quantity(str(limit)))
    return out


def _quantity(text: str) -> int:
    for suffix in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * _UNITS[suffix])
    return int(float(text))
