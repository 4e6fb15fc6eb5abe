"""The API real clients speak, on the local stack through the real Envoy edge (issue 27 section 4), and the
pathological-guide class (section 2): each guide limit is a 400 naming it, and the replica answers the next request.

Spoken with the official ``openai`` client (and raw HTTP where a client would refuse to send the body): tool calling
in OpenAI's shape (a forced or required choice is guided JSON; ``auto`` parses Llama 3.1's JSON call format), streamed
tool-call deltas, ``n`` choices, ``logprobs``, the extension fields vLLM and trtllm-serve accept, ``X-Request-Id``, and
the 400s for malformed bodies that used to be 500s.
"""

from __future__ import annotations

import json

import httpx
import jsonschema
import openai
import pytest

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(300)]

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            # No numeric bounds: the stand-in's guided decoding (outlines-core) does not enforce an integer's
            # minimum/maximum (docs/serving.md); xgrammar does, and gpu_check's tool-call check runs on it.
            "properties": {"city": {"type": "string", "maxLength": 40}, "days": {"type": "integer"}},
            "required": ["city", "days"],
            "additionalProperties": False,
        },
    },
}  # fmt: skip
CLOCK = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}


@pytest.fixture(scope="module")
def stack(shared_stack):
    return shared_stack


@pytest.fixture(scope="module")
def client(stack):
    http = openai.DefaultHttpxClient(verify=str(stack.edge.certificates.ca))
    with openai.OpenAI(
        base_url=f"{stack.edge.url}/v1", api_key=stack.api_key, http_client=http, max_retries=0, timeout=60
    ) as c:
        yield c


@pytest.fixture(scope="module")
def raw(stack):
    headers = {"authorization": f"Bearer {stack.api_key}", "content-type": "application/json"}
    with httpx.Client(
        base_url=stack.edge.url, verify=str(stack.edge.certificates.ca), headers=headers, timeout=60
    ) as h:
        yield h


def ask(client, stack, content: str = "Weather in Paris for 3 days?", **kwargs):
    kwargs.setdefault("max_tokens", 200)
    return client.chat.completions.create(
        model=stack.served_model, messages=[{"role": "user", "content": content}], **kwargs
    )


def ask_second_turn(client, stack, content: str, **kwargs):
    """The tools go into the first user turn (Llama 3.1's template): the stand-in echoes a later one as it is."""
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                {"role": "user", "content": content}]  # fmt: skip
    return client.chat.completions.create(model=stack.served_model, messages=messages, max_tokens=200, **kwargs)


def test_a_named_tool_choice_answers_a_tool_call_whose_arguments_follow_the_schema(client, stack):
    forced = {"type": "function", "function": {"name": "get_weather"}}
    reply = ask(client, stack, tools=[WEATHER, CLOCK], tool_choice=forced)
    (call,) = reply.choices[0].message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    jsonschema.validate(json.loads(call.function.arguments), WEATHER["function"]["parameters"])
    assert reply.choices[0].message.content is None and reply.choices[0].finish_reason == "stop"


def test_required_picks_one_declared_tool_and_finishes_with_tool_calls(client, stack):
    reply = ask(client, stack, tools=[WEATHER, CLOCK], tool_choice="required")
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name in ("get_weather", "get_time")
    assert isinstance(json.loads(call.function.arguments), dict)
    assert reply.choices[0].finish_reason == "tool_calls"


def test_auto_parses_llama_3_1_json_calls_and_leaves_prose_as_content(client, stack):
    # The stand-in echoes the user's last message: one that is a Llama 3.1 call comes back as one.
    call_text = '{"name": "get_weather", "parameters": {"city": "Oslo", "days": 2}}'
    called = ask_second_turn(client, stack, call_text, tools=[WEATHER])
    (call,) = called.choices[0].message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Oslo", "days": 2})
    assert called.choices[0].finish_reason == "tool_calls"
    prose = ask_second_turn(client, stack, "just say hello", tools=[WEATHER])
    assert prose.choices[0].message.tool_calls is None and prose.choices[0].message.content
    unknown = ask_second_turn(client, stack, '{"name": "launch_rocket", "parameters": {}}', tools=[WEATHER])
    assert unknown.choices[0].message.tool_calls is None  # not a declared tool: content


def test_streamed_tool_calls_arrive_as_openai_deltas(client, stack):
    forced = {"type": "function", "function": {"name": "get_weather"}}
    chunks = list(ask(client, stack, tools=[WEATHER], tool_choice=forced, stream=True))
    calls = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or []) if c.choices]
    assert calls[0].id and calls[0].function.name == "get_weather" and calls[0].index == 0
    arguments = "".join(tc.function.arguments or "" for tc in calls)
    jsonschema.validate(json.loads(arguments), WEATHER["function"]["parameters"])
    assert len(calls) > 2  # the arguments stream as they are generated
    required = list(ask(client, stack, tools=[WEATHER, CLOCK], tool_choice="required", stream=True))
    parts = [tc for c in required for tc in (c.choices[0].delta.tool_calls or []) if c.choices]
    assert parts[0].function.name in ("get_weather", "get_time")
    assert isinstance(json.loads("".join(tc.function.arguments or "" for tc in parts)), dict)
    assert [c.choices[0].finish_reason for c in required if c.choices][-1] == "tool_calls"


def test_a_conversation_with_a_tool_result_renders_and_answers(client, stack):
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 1}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny and 21 degrees"},
    ]  # fmt: skip
    reply = client.chat.completions.create(model=stack.served_model, messages=messages, tools=[WEATHER], max_tokens=50)
    assert reply.choices[0].message.content == "sunny and 21 degrees"  # the stand-in echoes the tool's result


def test_n_choices_and_logprobs_come_back_in_openais_shape(client, stack):
    reply = ask(client, stack, "alpha beta gamma delta", n=3, temperature=0.9, logprobs=True, top_logprobs=2)
    assert [c.index for c in reply.choices] == [0, 1, 2]
    for choice in reply.choices:
        assert sorted(choice.message.content.split()) == ["alpha", "beta", "delta", "gamma"]
        entries = choice.logprobs.content
        assert "".join(e.token for e in entries) == choice.message.content
        assert all(len(e.top_logprobs) == 2 and e.logprob <= 0 and e.bytes for e in entries)
    assert reply.usage.completion_tokens == sum(len(c.logprobs.content) for c in reply.choices)
    with pytest.raises(openai.BadRequestError, match="need sampling"):
        ask(client, stack, n=2, temperature=0)
    completion = client.completions.create(model=stack.served_model, prompt="one two", max_tokens=5, logprobs=3)
    block = completion.choices[0].logprobs
    assert len(block.tokens) == len(block.token_logprobs) == len(block.top_logprobs) == 5


def test_the_extension_fields_reach_the_engine(client, stack):
    extra = {"top_k": 5, "min_tokens": 6, "ignore_eos": True, "repetition_penalty": 1.05, "skip_special_tokens": True}
    held = client.completions.create(model=stack.served_model, prompt="ab", max_tokens=9, extra_body=extra)
    assert held.usage.completion_tokens == 9 and held.choices[0].finish_reason == "length"  # ignore_eos: to max
    stopped = client.completions.create(
        model=stack.served_model, prompt="abcdef", max_tokens=20, extra_body={"stop_token_ids": [ord("d") - 1]}
    )
    assert stopped.choices[0].finish_reason == "stop"


def test_a_request_id_is_taken_or_made_echoed_and_names_the_answer(raw, stack):
    body = {"model": stack.served_model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
    # Through the edge, Envoy's own x-request-id reaches the server (an edge proxy replaces a client's): it is echoed
    # and names the answer, so Envoy's access log and the server's log share it.
    through = raw.post("/v1/chat/completions", json=body, headers={"x-request-id": "from-the-client"})
    assert through.status_code == 200 and through.json()["id"] == f"chatcmpl-{through.headers['x-request-id']}"
    with httpx.Client(base_url=stack.openai_url, timeout=60) as direct:
        given = direct.post("/v1/chat/completions", json=body, headers={"x-request-id": "trace-42.a"})
        made = direct.post("/v1/chat/completions", json=body, headers={"x-request-id": "not ok!"})
    assert given.status_code == 200 and given.headers["x-request-id"] == "trace-42.a"
    assert given.json()["id"] == "chatcmpl-trace-42.a"
    assert made.headers["x-request-id"] != "not ok!" and len(made.headers["x-request-id"]) == 32
    log = stack.logs["openai"].read_text(errors="replace")
    assert "request trace-42.a client none" in log and f"request {through.headers['x-request-id']} client " in log


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b'{"model": "m", "messages": [' * 2000, None),
        (b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1.0}', "max_tokens"),
        (b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": "5"}', "max_tokens"),
        (b"[" * 100 + b"]" * 100, None),
        (b'{"model": "m", "messages": [{"role": "user", "content": "\\ud800"}], "max_tokens": 1', None),
    ],
)
def test_malformed_or_nested_bodies_are_400s_not_500s(raw, body, param):
    answer = raw.post("/v1/chat/completions", content=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "invalid_request_error" and answer.json()["error"]["param"] == param


def _schema_format(schema):
    return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}


@pytest.mark.parametrize(
    ("schema", "limit"),
    [
        ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 1_000_000_000}}}, "stringLength"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "a{1000000}"}}}, "stringLength"),
        ({"type": "object", "properties": {"a": {"type": "array", "maxItems": 10**9}}}, "arrayItems"),
        ({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(5001)}}, "properties"),
        ({"type": "object", "properties": {"a": {"enum": list(range(1001))}}}, "enumValues"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "z" * 1001}}}, "patternChars"),
    ],
)
def test_each_guide_limit_is_a_400_naming_it_and_the_replica_answers_the_next_request(client, stack, schema, limit):
    with pytest.raises(openai.BadRequestError) as caught:
        ask(client, stack, response_format=_schema_format(schema))
    assert f"serving.guidedDecoding.limits.{limit}" in caught.value.message
    assert caught.value.code == "guide_limit_exceeded"
    after = ask(client, stack, "still here", max_tokens=20)
    assert after.choices[0].message.content == "still here"


def test_nesting_and_tool_counts_are_bounded_too(client, stack):
    deep: dict = {"type": "string"}
    for _ in range(11):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(openai.BadRequestError, match=r"limits\.depth"):
        ask(client, stack, response_format=_schema_format(deep))
    tools = [{"type": "function", "function": {"name": f"t{i}"}} for i in range(129)]
    with pytest.raises(openai.BadRequestError, match=r"limits\.tools"):
        ask(client, stack, tools=tools)
    assert ask(client, stack, "and still here", max_tokens=20).choices[0].message.content == "and still here"
