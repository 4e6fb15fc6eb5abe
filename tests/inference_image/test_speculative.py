"""Speculative decoding: the choices tree renders in NVIDIA's format; unsupported combinations are refused."""

from __future__ import annotations

import pytest
from inference_platform.components.catalog.speculative import (
    choices_problems,
    format_choices,
    parse_choices,
    unsupported,
)
from inference_platform.inference_image.speculative import speculative_parameters


def _with(serving, **speculative):
    spec = serving.speculative.model_copy(update=speculative)
    return serving.model_copy(update={"speculative": spec})


def _problems(settings) -> dict[str, str]:
    found: dict[str, str] = {}
    for problem in settings.shape_problems():
        found[problem.path] = "; ".join(filter(None, (found.get(problem.path), problem.message)))
    return found


def test_choices_round_trip_in_nvidias_format():
    tree = [[0], [0, 0], [1], [0, 1], [0, 0, 0]]
    assert format_choices(tree) == "{0}, {0, 0}, {1}, {0, 1}, {0, 0, 0}"
    assert parse_choices(format_choices(tree)) == tree
    assert parse_choices("") == []
    with pytest.raises(ValueError):
        parse_choices("[[0], [1]]")


@pytest.mark.parametrize(
    ("tree", "draft_length", "expected"),
    [
        ([[0], [0, 0], [1]], 3, []),
        ([[0], [0]], 4, ["paths must be distinct"]),
        ([[0, 1]], 4, ["has no parent [0]"]),
        ([[0], [1], [2]], 2, ["3 paths exceed draftLength 2"]),
        ([[-1]], 4, ["non-negative"]),
    ],
)
def test_a_tree_the_engine_cannot_verify_is_named(tree, draft_length, expected):
    problems = choices_problems(tree, draft_length)
    assert len(problems) == len(expected)
    for problem, fragment in zip(problems, expected, strict=True):
        assert fragment in problem


def test_every_refusal_names_its_source():
    found = unsupported(mode="eagle", pipeline_parallel=2, max_beam_width=2, enable_chunked_context=True)
    assert {f.key for f in found} == {
        "serving.maxBeamWidth",
        "serving.pipelineParallel",
        "serving.kvCache.enableChunkedContext",
    }
    assert all("TensorRT-LLM" in f.source or "tensorrtllm_backend" in f.source for f in found)
    assert unsupported(mode="medusa", pipeline_parallel=1, max_beam_width=1, enable_chunked_context=True) == []
    assert unsupported(mode="none", pipeline_parallel=4, max_beam_width=4, enable_chunked_context=True) == []


def test_settings_render_the_tree_for_the_mode(serving):
    dev = serving["dev"]
    medusa = _with(dev, mode="medusa", draft_length=4, choices=[[0], [0, 0], [1]])
    assert _problems(medusa) == {}
    assert speculative_parameters(medusa) == {"medusa_choices": "{0}, {0, 0}, {1}"}
    eagle = _with(dev, mode="eagle", draft_length=4, choices=[[0], [1]]).model_copy(
        update={"kv_cache": dev.kv_cache.model_copy(update={"enable_chunked_context": False})}
    )
    assert speculative_parameters(eagle) == {"eagle_choices": "{0}, {1}"}
    assert speculative_parameters(_with(dev, mode="medusa", draft_length=4)) == {}  # backend default tree


def test_settings_refuse_what_the_pinned_tensorrt_llm_does_not_serve(serving):
    dev = serving["dev"]
    problems = _problems(_with(dev, mode="eagle", draft_length=2, choices=[[0], [0, 0], [1, 1]]))
    assert "chunked context" in problems["serving.kvCache.enableChunkedContext"]
    assert "source: NVIDIA/TensorRT-LLM examples/eagle/README.md" in problems["serving.kvCache.enableChunkedContext"]
    assert "has no parent [1]" in problems["serving.speculative.choices"]
    assert "exceed draftLength 2" in problems["serving.speculative.choices"]
    problems = _problems(_with(dev, choices=[[0]]))
    assert problems["serving.speculative.choices"] == "set without a speculative mode"
    pipelined = _with(dev, mode="medusa", draft_length=4).model_copy(update={"pipeline_parallel": 2})
    assert "pipeline parallelism" in _problems(pipelined)["serving.pipelineParallel"]
