"""The image pins the runtime release.py records, and every fact about it names where it was read."""

from __future__ import annotations

import re
from pathlib import Path

from inference_platform.inference_image.llmapi import llm_args_schema, release

IMAGE = Path(__file__).resolve().parents[3] / "inference_image"


def test_the_dockerfile_builds_on_the_pinned_release():
    text = (IMAGE / "Dockerfile").read_text()
    assert re.search(r"^ARG TRITON_TAG=(\S+)$", text, re.MULTILINE).group(1) == release.TRITON_TAG
    assert "FROM nvcr.io/nvidia/tritonserver:${TRITON_TAG}" in text
    assert release.IMAGE == "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3"
    # The constraint file speaks of the same base and records its Python.
    constraints = (IMAGE / "base_image_constraints.txt").read_text()
    assert release.IMAGE in constraints and f"# python: {release.PYTHON_VERSION}" in constraints


def test_each_fact_of_the_release_cites_its_file():
    facts = release.PROVENANCE
    assert f"TensorRT-LLM {release.TENSORRT_LLM_VERSION}" in facts["tag_and_tensorrt_llm"]
    assert release.TRITON_TAG in facts["tag_and_tensorrt_llm"]
    assert "docs/introduction/compatibility.md" in facts["tag_and_tensorrt_llm"]
    assert f"release_version {release.TRITON_SERVER_VERSION}" in facts["triton_version"]
    assert "TENSORRTLLM_VER=1.2.1" in facts["backend_branch"] and "release/1.2.1" in facts["backend_branch"]
    assert "Leader Mode: Not currently supported" in facts["openai_frontend"]
    assert release.TENSORRT_LLM_VERSION in llm_args_schema.SOURCE_LLM_ARGS
