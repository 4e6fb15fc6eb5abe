"""The provider's schema as the Pulumi SDK infers it, and its copy in provider/schema.json.

``python -m inference_platform.components.multilang.schema [PATH]`` rewrites the copy (default
provider/schema.json in this checkout): consumers and reviewers read the schema there without starting the
plugin, and a test fails when the facades changed and the copy did not.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "provider" / "schema.json"
"""provider/schema.json beside PulumiPlugin.yaml (in a checkout; an installed wheel has no provider/)."""


def provider_schema() -> dict[str, Any]:
    """The schema ``GetSchema`` answers, inferred from the facades exactly as the running provider does."""
    from pulumi.provider.experimental.component import ComponentProvider

    from inference_platform.components.multilang.host import COMPONENTS, DISTRIBUTION, PACKAGE

    text = ComponentProvider(list(COMPONENTS), PACKAGE, None, version(DISTRIBUTION)).schema
    if text is None:
        raise RuntimeError(f"the component provider inferred no schema for {PACKAGE}")
    schema: dict[str, Any] = json.loads(text)
    return schema


def render(schema: dict[str, Any]) -> str:
    """The file's text: sorted keys, two-space indent, a final newline (stable diffs)."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_FILE
    target.write_text(render(provider_schema()))
    print(f"wrote {target}")
