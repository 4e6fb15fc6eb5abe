"""Speculative decoding facts for the pinned TensorRT-LLM (0.19, in the 25.05 image): trees and refusals.

Medusa and EAGLE are built into the target engine; the server chooses the tree of draft paths it
verifies per step (``medusa_choices`` / ``eagle_choices`` in the ``tensorrt_llm`` config, NVIDIA's format
``{0}, {0, 0}, {1}``). Without choices the backend uses its default tree (``mc_sim_7b_63``). Each refusal
below carries its source, so a bump of TensorRT-LLM knows which facts to re-read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MODES = ("none", "medusa", "eagle")
CHOICES_PARAMETER = {"medusa": "medusa_choices", "eagle": "eagle_choices"}
MAX_TREE_DEPTH = 8


@dataclass(frozen=True)
class Unsupported:
    """A combination the pinned TensorRT-LLM refuses or mis-serves, with where that is written."""

    key: str
    """Settings key path to name in the error."""
    message: str
    source: str


# Read in NVIDIA/TensorRT-LLM at the commits named (the examples' support matrices and known issues).
_MEDUSA_README = "NVIDIA/TensorRT-LLM examples/medusa/README.md (commit 0f041b7b), Support Matrix"
_EAGLE_README = "NVIDIA/TensorRT-LLM examples/eagle/README.md (commit 06255cb7), Known issues"
_BACKEND_DOCS = "triton-inference-server/tensorrtllm_backend r25.05 docs/model_config.md, decoding_mode"


def format_choices(choices: Sequence[Sequence[int]]) -> str:
    """NVIDIA's text form of a choices tree: ``{0}, {0, 0}, {1}``."""
    return ", ".join("{" + ", ".join(str(i) for i in path) + "}" for path in choices)


def parse_choices(text: str) -> list[list[int]]:
    """The inverse of ``format_choices``; raises ValueError on anything else (empty text: no tree)."""
    text = text.strip()
    if not text:
        return []
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError(f"expected {{i, j}}, {{k}} ..., got {text!r}")
    paths = []
    for part in text[1:-1].split("}"):
        part = part.strip().lstrip(",").strip().lstrip("{").strip()
        if not part:
            raise ValueError(f"empty path in {text!r}")
        paths.append([int(i) for i in part.split(",")])
    return paths


def choices_problems(choices: Sequence[Sequence[int]], draft_length: int | None) -> list[str]:
    """Why ``choices`` is not a tree the engine can verify (empty when it is)."""
    problems = []
    seen = {tuple(path) for path in choices}
    if len(seen) != len(choices):
        problems.append("paths must be distinct")
    for path in choices:
        if not path or len(path) > MAX_TREE_DEPTH or any(i < 0 for i in path):
            problems.append(f"path {list(path)} must hold 1-{MAX_TREE_DEPTH} non-negative indices")
        elif len(path) > 1 and tuple(path[:-1]) not in seen:
            # A node is verified only after its parent: the tree must hold every prefix (Medusa's tree).
            problems.append(f"path {list(path)} has no parent {list(path[:-1])} in the tree")
    if draft_length is not None and len(choices) > draft_length:
        # Each path is one draft token per step; the engine holds max_draft_len of them.
        problems.append(f"{len(choices)} paths exceed draftLength {draft_length} (the engine's max_draft_len)")
    return problems


def unsupported(
    *,
    mode: str,
    pipeline_parallel: int,
    max_beam_width: int,
    enable_chunked_context: bool,
) -> list[Unsupported]:
    """Combinations of settings the pinned TensorRT-LLM does not serve with ``mode``."""
    if mode == "none":
        return []
    found = []
    if max_beam_width > 1:
        found.append(
            Unsupported(
                "serving.maxBeamWidth",
                f"{mode} decoding runs with beam width 1 only (greedy acceptance)",
                _EAGLE_README if mode == "eagle" else _BACKEND_DOCS,
            )
        )
    if pipeline_parallel > 1:
        found.append(
            Unsupported(
                "serving.pipelineParallel",
                f"{mode} decoding supports tensor parallelism only, not pipeline parallelism",
                _EAGLE_README if mode == "eagle" else _MEDUSA_README,
            )
        )
    if mode == "eagle" and enable_chunked_context:
        found.append(
            Unsupported("serving.kvCache.enableChunkedContext", "EAGLE does not support chunked context", _EAGLE_README)
        )
    return found
