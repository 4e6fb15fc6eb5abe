"""The CPU stand-in's behaviour (test double): echo, refusals and guide-satisfying texts."""

from __future__ import annotations

import itertools
import json
import re

import pytest
from inference_platform.inference_image.runtime.llm_request import LlmRequest, RequestError
from inference_platform.inference_image.testing.cpu_llm.echo import body_tokens, echo, refusal
from inference_platform.inference_image.testing.cpu_llm.guided import GuideError, satisfying_text


def _request(**fields) -> LlmRequest:
    base = {
        "input_ids": (10, 11, 12),
        "max_new_tokens": 8,
        "end_id": 2,
        "pad_id": 2,
        "streaming": True,
        "exclude_input_in_output": None,
    }
    base.update(fields)
    return LlmRequest(**base)


def test_echo_repeats_the_prompt_with_end_id_between_passes():
    assert list(itertools.islice(echo(_request(), (10, 11, 12)), 8)) == [10, 11, 12, 2, 10, 11, 12, 2]
    assert list(itertools.islice(echo(_request(end_id=None), (10, 11)), 5)) == [10, 11, 10, 11, 10]


def test_echo_never_completes_a_bad_word():
    tokens = list(itertools.islice(echo(_request(bad_words=((11, 12),)), (10, 11, 12, 13)), 6))
    assert tokens == [10, 11, 13, 2, 10, 11]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"beam_width": 2}, "exceeds the engine's max_beam_width"),
        ({"return_context_logits": True}, "no logits"),
        ({"embedding_bias": (0.0, 1.5)}, "no logits to bias"),
        ({"guide_type": "json"}, "guided decoding is not enabled"),
    ],
)
def test_the_stand_in_refuses_what_an_engine_without_the_feature_refuses(fields, message):
    assert message in (refusal(_request(**fields), max_beam_width=1, guided_backend="none") or "")
    assert refusal(_request(), max_beam_width=1, guided_backend="none") is None


def test_guided_requests_emit_the_guide_text(tokenizer):
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 3}}, "required": ["n"]}
    request = _request(
        input_ids=tuple(tokenizer.encode("hi", add_special_tokens=False)),
        guide_type="json_schema",
        guide=json.dumps(schema),
    )
    tokens = body_tokens(request, tokenizer)
    assert json.loads(tokenizer.decode(tokens, skip_special_tokens=True)) == {"n": 3}
    with pytest.raises(RequestError, match="ebnf_grammar"):
        body_tokens(_request(guide_type="ebnf_grammar", guide="root ::= x"), tokenizer)


@pytest.mark.parametrize(
    "pattern",
    [r"\d+", r"[A-Z]{3}-\d{4}", r"(yes|no)", r"[^abc]x", r"(\w+)@(\w+)\.com", r"\s*\{\}", r"a(b)\1", r"[a-f0-9]{8}"],
)
def test_regex_guides_get_a_matching_text(pattern):
    assert re.fullmatch(pattern, satisfying_text("regex", pattern, "prompt"))


def test_json_schema_guides_get_a_conforming_instance():
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "maxLength": 3},
            "score": {"type": "number", "minimum": 0.5},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 2},
            "ok": {"type": "boolean"},
            "kind": {"const": "x"},
        },
    }
    value = json.loads(satisfying_text("json_schema", json.dumps(schema), "prompt"))
    assert value == {"answer": "pro", "score": 0.5, "tags": ["a", "a"], "ok": True, "kind": "x"}
    assert json.loads(satisfying_text("json", None, "hey")) == {"text": "hey"}
    for bad, message in (("{", "not JSON"), ('{"$ref": "#/x"}', r"\$ref"), ('{"type": "date"}', "unsupported")):
        with pytest.raises(GuideError, match=message):
            satisfying_text("json_schema", bad, "p")
    with pytest.raises(GuideError, match="not a regex"):
        satisfying_text("regex", "(", "p")
