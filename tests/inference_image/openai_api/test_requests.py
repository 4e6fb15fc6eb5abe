"""OpenAI request bodies: what is accepted, and the 400 (naming the field) for what the engine cannot honour."""

from __future__ import annotations

import json

import pytest

from inference_platform.inference_image.openai_api.errors import ApiError
from inference_platform.inference_image.openai_api.guides import Guide
from inference_platform.inference_image.openai_api.requests import parse_chat, parse_completion

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
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"max_tokens": 1.0}, "max_tokens"),
        ({"max_tokens": "1"}, "max_tokens"),
        ({"max_tokens": True}, "max_tokens"),
        ({"n": 0}, "n"),
        ({"n": 17}, "n"),
        ({"n": 2, "best_of": 1}, "best_of"),
        ({"best_of": 2, "stream": True}, "best_of"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"top_logprobs": 21, "logprobs": True}, "top_logprobs"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"logit_bias": {"x": 1}}, "logit_bias"),
        ({"logit_bias": {"1": 500}}, "logit_bias.1"),
        ({"functions": [{"name": "f"}]}, "functions"),
        ({"echo": True}, "echo"),
        ({"guided_json": {"type": "object"}}, "guided_json"),
        ({"use_beam_search": True}, "use_beam_search"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages[0].content",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{not json"}}
                        ],
                    }
                ]
            },
            "messages[0].tool_calls[0].function.arguments",
        ),
        ({"temperature": 2.5}, "temperature"),
        ({"top_p": 0}, "top_p"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stream_options": {"include_usage": True}}, "stream_options"),
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
        ({"logprobs": 21}, "logprobs"),
        ({"best_of": 3, "stream": True}, "best_of"),
    ):
        assert refused(parse_completion, {"model": "m", "prompt": "p"} | change).param.startswith(param)


def test_the_extensions_vllm_and_trtllm_serve_accept_are_mapped():
    g = parse_chat(
        CHAT
        | {
            "top_k": 40, "min_tokens": 3, "repetition_penalty": 1.1, "ignore_eos": True, "stop_token_ids": [7, 9],
            "skip_special_tokens": False, "include_stop_str_in_output": True, "n": 2,
            "logprobs": True, "top_logprobs": 4, "logit_bias": {"12": -100}, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
    )  # fmt: skip
    assert (g.top_k, g.min_tokens, g.repetition_penalty, g.ignore_eos) == (40, 3, 1.1, True)
    assert (g.stop_token_ids, g.skip_special_tokens, g.include_stop_str_in_output) == ((7, 9), False, True)
    assert (g.n, g.logprobs, g.top_logprobs, g.logit_bias) == (2, 4, 4, {12: -100.0})
    assert parse_completion({"model": "m", "prompt": "p", "n": 2, "best_of": 3}).best_of == 3
    assert (g.include_usage, g.continuous_usage) == (True, True)
    assert parse_chat(CHAT | {"top_k": -1}).top_k is None  # vLLM's "no limit"
    assert parse_chat(CHAT | {"logprobs": True}).logprobs == 1


def test_fields_without_effect_are_accepted_and_reported_and_unknown_ones_too():
    g = parse_chat(CHAT | {"seed": 7, "user": "u", "min_p": 0.1, "frobnicate": 1, "store": False})
    assert g.ignored == ("frobnicate", "min_p", "seed", "user") and g.seed == 7
    assert parse_chat(CHAT).ignored == ()


def test_usage_streams_only_when_asked_continuous_only_with_include_usage():
    assert parse_chat(CHAT | {"stream": True}).include_usage is False
    g = parse_chat(CHAT | {"stream": True, "stream_options": {"continuous_usage_stats": True}})
    assert (g.include_usage, g.continuous_usage) == (False, False)


def test_tools_become_template_specs_and_a_forced_choice_becomes_guided_json():
    weather = {"type": "function", "function": {"name": "get_weather", "description": "d",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}  # fmt: skip
    auto = parse_chat(CHAT | {"tools": [weather]})
    assert auto.tools.choice == "auto" and auto.guide is None and auto.tools.names == ("get_weather",)
    named = parse_chat(
        CHAT | {"tools": [weather], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}
    )
    assert named.guide == Guide("json_schema", json.dumps(weather["function"]["parameters"], separators=(",", ":")))
    required = parse_chat(CHAT | {"tools": [weather], "tool_choice": "required"})
    schema = json.loads(required.guide.text)
    assert schema["anyOf"][0]["properties"]["name"] == {"const": "get_weather"}
    assert parse_chat(CHAT | {"tools": [weather], "tool_choice": "none"}).tools is None
    err = refused(
        parse_chat, CHAT | {"tools": [weather], "tool_choice": {"type": "function", "function": {"name": "x"}}}
    )
    assert err.param == "tool_choice"
    assert refused(parse_chat, CHAT | {"tools": [weather] * 2}).param == "tools"  # names must be unique
    assert (
        refused(
            lambda b: parse_chat(b, max_tools=1),
            CHAT | {"tools": [weather, weather | {"function": weather["function"] | {"name": "b"}}]},
        ).code
        == "guide_limit_exceeded"
    )


def test_docs_show_what_each_field_does_as_the_server_has_it(repo):
    from inference_platform.inference_image.openai_api import fields

    assert fields.markdown() in (repo / "docs" / "serving.md").read_text()
    # Every row's disposition is the one the parser applies.
    for field in fields.FIELDS:
        for endpoint in field.endpoints:
            assert fields.disposition(field.name, endpoint) == field.disposition
