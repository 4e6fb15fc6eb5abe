"""A stack's validated settings read straight from its files, for tools that run outside Pulumi
(``serve-local`` renders the dev stack's serving settings; tests read every stack)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inference_platform.errors import CommandError
from inference_platform.settings import Settings, SettingsError, decode_value, load_settings
from inference_platform.settings.project import load_project, load_stack_config

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The checkout this module runs from, when it is one (an editable install); an installed wheel has no
Pulumi.yaml here, and nothing is looked for in site-packages."""


def project_dir(start: Path | None = None) -> Path:
    """The project whose stacks a tool reads: the nearest folder holding a Pulumi.yaml from ``start`` (the
    current directory) upwards, else this checkout's; CommandError (exit 2) when there is neither."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents, REPO_ROOT):
        if (folder / "Pulumi.yaml").is_file() or (folder / "Pulumi.yml").is_file():
            return folder
    raise CommandError(
        f"no Pulumi.yaml in {here} or above it: run inferctl from the project's folder (the one holding its "
        "Pulumi.yaml and stacks/)",
        exit_code=2,
    )


def load(stack: str, *, program_dir: Path | None = None, stack_file: Path | None = None) -> Settings:
    project = load_project(program_dir or project_dir())
    config = load_stack_config(project, stack, stack_file)
    prefix = f"{project.name}:"
    values: dict[str, Any] = {
        key[len(prefix) :]: decode_value(key[len(prefix) :], raw)
        for key, raw in config.values.items()
        if key.startswith(prefix)
    }
    secret = [k[len(prefix) :] for k in config.secret_keys if k.startswith(prefix)]
    try:
        return load_settings(
            values, project=project.name, stack=stack, region=config.values.get("aws:region"), secret_keys=secret
        )
    except SettingsError as err:
        raise CommandError(str(err), exit_code=2) from None


def load_document(path: Path, stack: str) -> Settings:
    """Settings from the document the program renders for in-cluster tools (settings/document.py)."""
    import json

    from inference_platform.settings.document import settings_from_document

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("stack") != stack:
            raise CommandError(f"--settings-file: {path} holds stack {doc.get('stack')!r}, not {stack!r}", exit_code=2)
        return settings_from_document(doc)
    except (OSError, ValueError, KeyError, AttributeError) as err:
        raise CommandError(f"--settings-file: cannot read {path}: {err}", exit_code=2) from None
    except SettingsError as err:
        raise CommandError(str(err), exit_code=2) from None
