"""Secret values in recorded inputs, as the engine marks them: replaced by ``[secret]`` before anything is written
(the plan JSON, the manifests, the PR comment); and credentials in plain strings (a URL's ``user:token@``, a
signed query, a token of a known shape: inference_platform.redaction) replaced by ``[redacted]`` there too."""

from __future__ import annotations

from typing import Any

from inference_platform.redaction import scrub

# The Pulumi wire format's marker of a secret value (pulumi.runtime.rpc's _special_secret_sig).
SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
SECRET_TEXT = "[secret]"


def redact(value: Any, *, keep_keys: bool = False) -> Any:
    """Wire-form value with every secret replaced by ``[secret]``. With ``keep_keys`` a secret mapping keeps its
    keys (each value ``[secret]``): a manifest's Secret ``stringData`` is secret as a whole (pulumi-kubernetes
    wraps it), yet its keys are what the API server and a schema check see."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG_KEY) == SECRET_SIG:
            inner = value.get("value")
            if keep_keys and isinstance(inner, dict):
                return {k: _secret_leaves(v) for k, v in inner.items()}
            return SECRET_TEXT
        return {scrub(k) if isinstance(k, str) else k: redact(v, keep_keys=keep_keys) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, keep_keys=keep_keys) for v in value]
    if isinstance(value, str):
        return scrub(value)
    return value


def _secret_leaves(value: Any) -> Any:
    """Inside a secret: mappings keep their keys, every other value is ``[secret]``."""
    if isinstance(value, dict) and value.get(SECRET_SIG_KEY) != SECRET_SIG:
        return {k: _secret_leaves(v) for k, v in value.items()}
    if isinstance(value, dict) and isinstance(value.get("value"), dict):
        return _secret_leaves(value["value"])
    return SECRET_TEXT
