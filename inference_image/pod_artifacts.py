"""What every serving pod checks before it serves: Triton's in-pod API key and each verified artifact.

Shared by the GPU start (``llmapi/launch.py``) and the Neuron one (``entrypoint.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError
from inference_platform.inference_image.server_args import ServerArgsError, check_api_key
from inference_platform.settings.serving import ServingSettings

EXIT_CONFIG = 2


def api_key(serving: ServingSettings, environ: Mapping[str, str]) -> str | None:
    """Triton's in-pod API key when serving.auth is on (the mounted secret or the named variable)."""
    auth = serving.auth
    if not auth.enabled:
        return None
    if auth.key_env is not None:
        key = environ.get(auth.key_env, "")
        source = f"environment variable {auth.key_env}"
    else:
        assert auth.key_file is not None  # settings require exactly one source
        source = auth.key_file
        try:
            key = Path(auth.key_file).read_text(encoding="utf-8")
        except OSError as err:
            raise CommandError(
                f"serving.auth is enabled but the API key {source} cannot be read ({err.strerror}): "
                "is the secrets CSI volume mounted?",
                EXIT_CONFIG,
            ) from None
    try:
        return check_api_key(key)
    except ServerArgsError as err:
        raise CommandError(f"{source}: {err}", EXIT_CONFIG) from None


def verified_download(download: Callable[..., Any], what: str, uri: str, dest: Path, pin: str | None) -> Any:
    """The verified artifact; ``pin`` (serving.artifacts.<what>ManifestSha256) refuses any other manifest."""
    from inference_platform.artifacts import ArtifactError, IntegrityError

    try:
        return download(uri, dest, expected_manifest_sha256=pin)
    except IntegrityError as err:
        files = "; ".join(str(m) for m in err.mismatches)
        detail = f" [{files}]" if len(err.mismatches) > 1 else ""
        pinned = f" (pinned by serving.artifacts.{what}ManifestSha256)" if pin and not err.mismatches else ""
        raise CommandError(f"{what} artifact refused, nothing served: {err}{detail}{pinned}", err.exit_code) from None
    except ArtifactError as err:
        raise CommandError(f"{what} artifact {uri}: {err}", err.exit_code) from None
