"""OpenAI request bodies: what is accepted, and the 400 (naming the field) for what the engine cannot honour."""

from __future__ import annotations

import json

import pytest

from inference_platform.inference_image.openai_api.errors import ApiError
from inference_platform.inference_image.openai_api.requests import Guide, parse_chat, parse_completion

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def refused(parse, body) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse(body)
    assert caught.value.status == 400 and caught.value.type == "invalid_request_error"
    return caught.value


def test_a_chat_request_becomes_one_generation_with_its_sampling_fields():
    g = parse_chat(
        CHAT
        | {
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "你好 "}, {"type": "text", "text": "🎉"}]},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_completion_tokens": 7,
            "max_tokens": 99,
            "temperature": 0.5,
            "top_p": 0.9,
            "seed": 42,
            "stop": "END",
            "presence_penalty": 0.1,
        }
    )
    assert g.messages == ({"role": "system", "content": "be brief"}, {"role": "user", "content": "你好 🎉"})
    assert (g.stream, g.include_usage, g.max_tokens, g.temperature, g.top_p, g.seed) == (True, True, 7, 0.5, 0.9, 42)
    assert g.stop == ("END",) and g.presence_penalty == 0.1 and g.guide is None


def test_response_format_maps_to_the_guide_types_of_the_model():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "thing", "schema": schema, "strict": True}}
    assert parse_chat(CHAT | {"response_format": fmt}).guide == Guide(
        "json_schema", json.dumps(schema, separators=(",", ":"))
    )
    assert parse_chat(CHAT | {"response_format": {"type": "json_object"}}).guide == Guide("json_object")
    assert parse_chat(CHAT | {"response_format": {"type": "text"}}).guide is None
    err = refused(parse_chat, CHAT | {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})
    assert err.param == "response_format.json_schema"


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"n": 2}, "n"),
        ({"logprobs": True}, "logprobs"),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
        ({"logit_bias": {"1": 5}}, "logit_bias"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"temperature": 2.5}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
        ({"frobnicate": 1}, "frobnicate"),
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ({"stop": [1]}, "stop"),
        ({"store": True}, "store"),
    ],
)
def test_what_the_engine_cannot_honour_is_a_400_naming_the_field(change, param):
    assert refused(parse_chat, CHAT | change).param == param


def test_a_missing_model_and_a_non_object_body_are_400s():
    assert refused(parse_chat, {"messages": CHAT["messages"]}).message == "Missing required parameter: 'model'"
    assert refused(parse_chat, ["not", "an", "object"]).param is None


def test_a_completion_takes_one_string_prompt_and_refuses_what_it_cannot_do():
    g = parse_completion({"model": "m", "prompt": ["once upon"], "max_tokens": 3, "seed": 1})
    assert (g.kind, g.prompt, g.max_tokens, g.seed, g.guide) == ("completion", "once upon", 3, 1, None)
    for change, param in (
        ({"prompt": ["a", "b"]}, "prompt"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": [1, 2, 3]}, "prompt"),
        ({"echo": True}, "echo"),
        ({"suffix": "x"}, "suffix"),
        ({"logprobs": 2}, "logprobs"),
        ({"best_of": 3}, "best_of"),
    ):
        assert refused(parse_completion, {"model": "m", "prompt": "p"} | change).param.startswith(param)
