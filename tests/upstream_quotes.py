"""Upstream facts kept as quotes (``{"repo", "ref", "path", "quote", "means"}`` in tests/data/upstream/*.json): each
quote is re-read from the mirror ``fetch`` left on this machine, at its tag or commit, and skipped where no mirror is."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

MIRRORS = {
    "envoyproxy/gateway": Path("/work/.mirror/envoyproxy+gateway/repo"),
    "envoyproxy/ai-gateway": Path("/work/.mirror/envoyproxy+ai-gateway/repo"),
    "envoyproxy/envoy": Path("/work/.mirror/envoyproxy+envoy/repo"),
    "llm-d/llm-d-router": Path("/work/.mirror/llm-d+llm-d-router/repo"),
    "aws-samples/bottlerocket-images-cache": Path("/work/.mirror/aws-samples+bottlerocket-images-cache/repo"),
    "awslabs/amazon-eks-ami": Path("/work/.mirror/awslabs+amazon-eks-ami/repo"),
}


def assert_quote_holds(fact: dict[str, Any]) -> None:
    """The fact's quote is in its file at its ref; a skip naming the mirror this machine lacks."""
    mirror = MIRRORS[fact["repo"]]
    if not (mirror / "HEAD").exists():
        pytest.skip(f"no mirror of {fact['repo']} on this machine (fetch it to re-read the fact)")
    source = subprocess.run(["git", "-C", str(mirror), "show", f"{fact['ref']}:{fact['path']}"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert fact["quote"] in source
