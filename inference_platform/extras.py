"""Which optional extra of the distribution each ``inferctl`` command needs, and the one sentence a command
says when its extra is not installed.

The core install (pyproject.toml ``dependencies``) is what a Pulumi program needs; ``plan``, ``cost`` and
``diff`` run on it. The other commands' packages come with the extras declared beside it in pyproject.toml;
tests/packaging/test_extras.py checks, from the sources, that each command imports nothing outside the core
and its extra.

The message comes when an import fails, not from a check up front: the images install what their commands
import without the whole extra (``inferctl artifacts download`` in the serving image has boto3 but no
matplotlib), and a command may never reach the package it would miss.
"""

from __future__ import annotations

from typing import Final

DISTRIBUTION: Final = "inference-platform"
NAMESPACE: Final = "inference_platform"

COMMAND_EXTRAS: Final[dict[str, str]] = {
    "artifacts": "cli",
    "capacity": "cli",
    "image-cache": "cli",
    "smoke": "cli",
    "verify": "loadtest",
    "loadtest": "loadtest",
    "serve-local": "serve-local",
}
"""inferctl command -> the extra that carries its third-party packages (absent: the core is enough)."""

IMAGE_COMMANDS: Final = frozenset({"serve", "prepare"})
"""Commands that run inside the serving images, whose Dockerfiles install what they need (TensorRT-LLM,
the Neuron SDK, Hugging Face's hub client): no extra can bring those onto a workstation."""


def missing_package_message(command: str, err: ModuleNotFoundError) -> str | None:
    """One sentence for a command that stopped because a third-party package is not installed; None when
    the missing module is our own (a broken install or a bug, which must not pass for a missing extra)."""
    module = (err.name or "").split(".")[0]
    if not module or module == NAMESPACE:
        return None
    if command in IMAGE_COMMANDS:
        return (
            f"needs the Python package {module!r}, which only the serving images install "
            "(inference_image/Dockerfile, Dockerfile.neuron): run it in the image"
        )
    extra = COMMAND_EXTRAS.get(command)
    if extra is None:
        return f"needs the Python package {module!r}, which the core install should have: reinstall {DISTRIBUTION}"
    return f"needs the {extra!r} extra (missing Python package {module!r}): pip install '{DISTRIBUTION}[{extra}]'"
