"""The OpenAI API of the local stack, spoken by the official ``openai`` client through the real Envoy edge (TLS,
``Authorization: Bearer <key>``) to the image's OpenAI server, the real CPU Triton and the production
``tensorrt_llm`` model with the stand-in engine (issue 20, "Proven here, running").

Token counts are checked against the checkpoint's own tokenizer (``tokenizers``), on the prompt the chat template
must produce, written out here.
"""

from __future__ import annotations

import json
import statistics
import time

import httpx
import jsonschema
import openai
import pytest
from tokenizers import Tokenizer

from inference_platform.inference_image.openai_api.llm_client import LOST_FINAL
from inference_platform.settings import stack_files

pytestmark = [pytest.mark.triton, pytest.mark.edge, pytest.mark.timeout(300)]

TOKENS_PER_BLOCK = 32
FREED_WITHIN_S = 1.0
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 60},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "languages": {"type": "array", "items": {"type": "string", "enum": ["en", "zh", "fr"]}, "maxItems": 2},
    },
    "required": ["name", "age", "languages"],
    "additionalProperties": False,
}
FREED: list[float] = []


@pytest.fixture(scope="module")
def stack(shared_stack):
    yield shared_stack  # the worker's one stack, with its edge (tests/shared_stack.py)
    if FREED:
        print(f"\nslot freed after the client left (s): median {statistics.median(FREED):.2f}, max {max(FREED):.2f}")


@pytest.fixture(scope="module")
def client(stack):
    http = openai.DefaultHttpxClient(verify=str(stack.edge.certificates.ca))
    with openai.OpenAI(
        base_url=f"{stack.edge.url}/v1", api_key=stack.api_key, http_client=http, max_retries=0, timeout=60
    ) as c:
        yield c


@pytest.fixture(scope="module")
def tokenizer(stack) -> Tokenizer:
    return Tokenizer.from_file(str(stack.model.checkpoint / "tokenizer.json"))


def chat_prompt(*turns: tuple[str, str]) -> str:
    """What the test checkpoint's chat template renders (Llama 3's turn format), with the generation prompt."""
    body = "".join(f"<|start_header_id|>{role}<|end_header_id|>\n\n{text}<|eot_id|>" for role, text in turns)
    return f"<|begin_of_text|>{body}<|start_header_id|>assistant<|end_header_id|>\n\n"


def count(tokenizer: Tokenizer, text: str, *, special: bool = False) -> int:
    return len(tokenizer.encode(text, add_special_tokens=special).ids)


def test_models_lists_the_served_model(client, stack):
    assert [m.id for m in client.models.list()] == [stack.served_model]
    # GET /v1/models/{model} is the server's; the edge admits only the list (catalog/edge_policy.py).
    with openai.OpenAI(base_url=f"{stack.openai_url}/v1", api_key="unused", max_retries=0) as direct:
        assert direct.models.retrieve(stack.served_model).id == stack.served_model
        with pytest.raises(openai.NotFoundError):
            direct.models.retrieve("gpt-4o")


def test_chat_round_trips_chinese_and_emoji_with_usage_the_tokenizer_counts(client, stack, tokenizer):
    text = "Say it back: 你好 世界 🎉🚀 café"
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]
    first = client.chat.completions.create(model=stack.served_model, messages=messages)
    answer = first.choices[0].message.content
    assert answer == text and first.choices[0].finish_reason == "stop"
    assert first.choices[0].message.role == "assistant" and first.object == "chat.completion"
    prompt = count(tokenizer, chat_prompt(("system", "Be brief."), ("user", text)))
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (prompt, count(tokenizer, answer))
    assert first.usage.total_tokens == prompt + first.usage.completion_tokens
    # Earlier requests on this replica may share the template's first tokens (partial reuse), never the message.
    assert first.usage.prompt_tokens_details.cached_tokens < count(
        tokenizer, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief."
    )
    again = client.chat.completions.create(model=stack.served_model, messages=messages)
    # The same prompt again: the engine's exact count, every prompt token but the last (which is always computed):
    # the full blocks, and the rest of the prompt partially from the block that also held the first answer's start.
    assert again.usage.prompt_tokens_details.cached_tokens == prompt - 1


def test_a_chat_stream_carries_the_text_and_usage_only_when_asked(client, stack, tokenizer):
    text = "stream me: ünïcødé ✓ 数据"
    kwargs = {"model": stack.served_model, "messages": [{"role": "user", "content": text}], "stream": True}
    chunks = list(client.chat.completions.create(**kwargs))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert all(c.usage is None for c in chunks)  # OpenAI, vLLM and trtllm-serve stream usage only when asked
    with_usage = list(client.chat.completions.create(**kwargs, stream_options={"include_usage": True}))
    assert with_usage[-1].choices == [] and with_usage[-1].usage.completion_tokens == count(tokenizer, text)
    assert with_usage[-1].usage.prompt_tokens == count(tokenizer, chat_prompt(("user", text)))
    assert all(c.usage is None for c in with_usage[:-1])
    assert len(with_usage[-2].choices) == 1 and with_usage[-2].choices[0].finish_reason == "stop"
    options = {"include_usage": True, "continuous_usage_stats": True}  # what guidellm sends
    continuous = list(client.chat.completions.create(**kwargs, stream_options=options))
    counts = [c.usage.completion_tokens for c in continuous[1:] if c.usage is not None]
    assert counts == sorted(counts) and counts[-1] == count(tokenizer, text) and len(counts) > 2


def test_completions_honour_max_tokens_and_stop_streaming_or_not(client, stack, tokenizer):
    prompt = "Once upon a time there was a tiny model"
    cut = client.completions.create(model=stack.served_model, prompt=prompt, max_tokens=9)
    assert (cut.choices[0].text, cut.choices[0].finish_reason) == (prompt[:9], "length")
    assert cut.object == "text_completion" and cut.usage.completion_tokens == 9
    assert cut.usage.prompt_tokens == count(tokenizer, prompt, special=True)  # the engine adds the BOS here
    stopped = client.completions.create(model=stack.served_model, prompt=prompt, max_tokens=100, stop=[" tiny"])
    assert (stopped.choices[0].text, stopped.choices[0].finish_reason) == ("Once upon a time there was a", "stop")
    streamed = client.completions.create(
        model=stack.served_model, prompt=prompt, max_tokens=100, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(streamed)
    assert "".join(c.choices[0].text for c in chunks if c.choices) == prompt
    assert chunks[-1].usage.completion_tokens == count(tokenizer, prompt)


def test_temperature_reaches_the_engine_and_seed_is_accepted_but_promises_nothing(client, stack):
    words = "alpha beta gamma delta epsilon zeta eta theta"

    def answer(**kw):
        reply = client.chat.completions.create(
            model=stack.served_model, messages=[{"role": "user", "content": words}], **kw
        )
        return reply.choices[0].message.content

    assert answer(temperature=0) == words
    sampled = {answer(temperature=0.9, seed=11) for _ in range(3)}
    # TensorRT-LLM 1.2.1's TorchSampler has one generator for the engine: the same seed, different samples.
    assert len(sampled) > 1 and all(sorted(s.split()) == sorted(words.split()) for s in sampled)
    log = stack.logs["openai"].read_text(errors="replace")
    assert "accepted without effect: seed" in log and "TorchSampler" in log


def test_a_json_schema_response_format_answer_validates(client, stack):
    reply = client.chat.completions.create(
        model=stack.served_model,
        messages=[{"role": "user", "content": "Describe Ada: 艾达 👩‍💻"}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}},
        max_tokens=400,
    )
    answer = json.loads(reply.choices[0].message.content)
    jsonschema.validate(answer, PERSON)
    assert reply.choices[0].finish_reason == "stop"
    obj = client.chat.completions.create(
        model=stack.served_model,
        messages=[{"role": "user", "content": "anything"}],
        response_format={"type": "json_object"},
    )
    assert isinstance(json.loads(obj.choices[0].message.content), dict)


def test_a_prompt_over_the_input_limit_gets_openais_400(client, stack):
    settings = stack_files.load("dev").serving
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model=stack.served_model, messages=[{"role": "user", "content": "x" * settings.max_input_len}]
        )
    err = caught.value
    assert (err.status_code, err.code, err.param, err.type) == (
        400,
        "context_length_exceeded",
        "messages",
        "invalid_request_error",
    )
    assert f"maximum input length is {settings.max_input_len} tokens" in err.message
    assert set(err.response.json()["error"]) == {"message", "type", "param", "code"}


def test_unknown_models_and_unsupported_parameters_get_openai_errors(client, stack):
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert (missing.value.code, missing.value.param) == ("model_not_found", "model")
    with pytest.raises(openai.BadRequestError) as many:
        client.chat.completions.create(model=stack.served_model, messages=[{"role": "user", "content": "hi"}], n=2)
    assert many.value.param == "n"
    with pytest.raises(openai.BadRequestError) as hot:
        client.chat.completions.create(
            model=stack.served_model, messages=[{"role": "user", "content": "hi"}], temperature=3
        )
    assert hot.value.param == "temperature"


@pytest.mark.parametrize("kind", ["chat", "completion"])
def test_a_client_that_leaves_mid_stream_frees_its_slot_within_a_second(client, stack, kind):
    long_text = "lorem ipsum dolor sit amet " * 80  # ~2,100 tokens at 3 ms each: ~6 s if nobody stopped it
    if kind == "chat":
        stream = client.chat.completions.create(
            model=stack.served_model, messages=[{"role": "user", "content": long_text}], stream=True
        )
    else:
        stream = client.completions.create(model=stack.served_model, prompt=long_text, max_tokens=3000, stream=True)
    for received, _ in enumerate(stream, start=1):
        if received == 20:
            break
    assert stack.active()["active"] == 1, "the stand-in is still generating while the client reads"
    left = time.monotonic()
    stream.close()
    deadline = left + 10
    while stack.active()["active"]:
        assert time.monotonic() < deadline, "the slot was never freed"
        time.sleep(0.02)
    FREED.append(time.monotonic() - left)
    assert FREED[-1] < FREED_WITHIN_S


def test_a_client_that_leaves_before_a_whole_answer_frees_its_slot_within_a_second(stack):
    """Without a stream nothing is written until the answer is whole; the server notices the client left anyway."""
    body = {"model": stack.served_model, "messages": [{"role": "user", "content": "ipsum " * 400}]}
    with httpx.Client(base_url=stack.openai_url, timeout=30) as plain, pytest.raises(httpx.ReadTimeout):
        plain.post("/v1/chat/completions", json=body, timeout=httpx.Timeout(30, read=0.5))
    left = time.monotonic()
    deadline = left + 10
    while stack.active()["active"]:
        assert time.monotonic() < deadline, "the slot was never freed"
        time.sleep(0.02)
    FREED.append(time.monotonic() - left)
    assert FREED[-1] < FREED_WITHIN_S


def test_concurrent_streams_each_get_their_own_answer_and_at_most_max_batch_size_generate(stack):
    """More streams than the engine's max_batch_size (model.yaml, from serving.maxBatchSize): the rest wait, and
    no stream gets another's text. Straight to the server: the edge's per-client stream limit is the edge's test.

    A stream is either its whole answer or an explicit error, never a shortened answer. Two loaded clean-clone runs
    lost the last Triton response of most of these streams: Triton 2.51's HTTP generate_stream writes each response
    from a callback it defers to its HTTP thread (src/http_server.cc) and ignores evthr_defer's result, which a full
    non-blocking socketpair makes EVTHR_RES_RETRY (libevhtp thread.c), so a starved HTTP thread drops one and the
    reply ends one response short. The OpenAI server now answers such a reply with an error event
    (llm_client.LOST_FINAL); that is allowed here, and counted."""
    from concurrent.futures import ThreadPoolExecutor

    batch = stack_files.load("dev").serving.max_batch_size
    # Long enough answers (~500 tokens, 1.5 s at 3 ms) that every stream is still running when the last one starts,
    # however slowly the clients' threads start on a busy machine: the last four must wait.
    WORDS = 60
    peaks = {"active": 0, "waiting": 0}
    done = []

    def ask(i: int) -> str | None:
        with openai.OpenAI(base_url=f"{stack.openai_url}/v1", api_key="unused", max_retries=0, timeout=60) as c:
            chunks = c.chat.completions.create(
                model=stack.served_model, messages=[{"role": "user", "content": f"stream {i} " * WORDS}], stream=True
            )
            try:
                return "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
            except openai.APIError as err:
                if LOST_FINAL not in str(err):
                    raise
                return None  # Triton's reply ended a response short: said, not shortened

    with ThreadPoolExecutor(max_workers=batch + 4) as pool:
        futures = [pool.submit(ask, i) for i in range(batch + 4)]
        while not all(f.done() for f in futures):
            state = stack.active()
            peaks = {k: max(peaks[k], state[k]) for k in peaks}
            time.sleep(0.01)
        done = [f.result() for f in futures]
    lost = [i for i, answer in enumerate(done) if answer is None]
    if lost:
        print(f"\nstreams whose Triton reply lost its last response (an error event, not a short answer): {lost}")
    assert done == [None if i in lost else (f"stream {i} " * WORDS).strip() for i in range(batch + 4)]
    assert peaks["active"] <= batch and peaks["waiting"] >= 1, peaks
