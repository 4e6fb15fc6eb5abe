"""The Triton client's handling of a kept-alive connection Triton already closed: retried once if nothing was
answered (nothing ran), a 503 otherwise; and the generate-extension events it reads."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from inference_platform.inference_image.openai_api.errors import ApiError
from inference_platform.inference_image.openai_api.llm_client import LOST_FINAL, EngineError, TritonLlm

EVENTS = [
    {"text_output": "Hel", "finish_reason": "", "num_input_tokens": 3, "num_output_tokens": 3, "num_cached_tokens": 0},
    {
        "text_output": "lo",
        "finish_reason": "stop",
        "num_input_tokens": 3,
        "num_output_tokens": 5,
        "num_cached_tokens": 0,
    },
]


def sse(events) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)


def collect(llm: TritonLlm):
    async def run():
        try:
            return [u async for u in llm.generate({"text_input": "hi"})]
        finally:
            await llm.close()

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def __aiter__(self):
        for chunk in self.chunks:
            yield chunk


def client(handler) -> TritonLlm:
    return TritonLlm("http://triton", "tensorrt_llm", client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


def test_a_stale_connection_before_any_answer_is_retried_once():
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) == 1:
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        return httpx.Response(200, content=sse(EVENTS), headers={"content-type": "text/event-stream"})

    updates = collect(client(handler))
    assert calls == ["/v2/models/tensorrt_llm/generate_stream"] * 2
    # Both events arrived in one read: one update, the texts joined, the latest counts and finish reason.
    assert [u.delta for u in updates] == ["Hello"] and updates[-1].finish_reasons == ("stop",)
    assert updates[-1].output_tokens == (5,)


def test_events_in_separate_reads_stay_separate_updates():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=_Chunks([sse(EVENTS[:1]), sse(EVENTS[1:])]),
                              headers={"content-type": "text/event-stream"})  # fmt: skip

    updates = collect(client(handler))
    assert [(u.delta, u.finish_reasons) for u in updates] == [("Hel", (None,)), ("lo", ("stop",))]


def test_vector_outputs_are_one_entry_per_sequence_and_the_request_id_goes_to_triton():
    seen = []
    events = [{"text_output": ["a", "b"], "finish_reason": ["length", "stop"], "num_input_tokens": 3,
               "num_output_tokens": [1, 1], "num_cached_tokens": 2, "queue_time_s": 0.25}]  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, content=sse(events), headers={"content-type": "text/event-stream"})

    llm = client(handler)

    async def run():
        try:
            return [u async for u in llm.generate({"text_input": "hi"}, request_id="req-7")]
        finally:
            await llm.close()

    loop = asyncio.new_event_loop()
    try:
        (update,) = loop.run_until_complete(run())
    finally:
        loop.close()
    assert seen == [{"id": "req-7", "text_input": "hi"}]
    assert (update.deltas, update.finish_reasons, update.output_tokens) == (("a", "b"), ("length", "stop"), (1, 1))
    assert (update.cached_tokens, update.queue_seconds) == (2, 0.25)


def test_a_connection_that_keeps_failing_is_a_503():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)

    with pytest.raises(ApiError) as caught:
        collect(client(handler))
    assert caught.value.status == 503 and caught.value.type == "service_unavailable"


@pytest.mark.parametrize(
    "events",
    [
        [EVENTS[0]],  # the last response (the one with the finish reason) never written
        [],  # the reply ended before any response
        [{**EVENTS[1], "text_output": ["a", "b"], "finish_reason": ["stop", ""]}],  # n=2: one sequence unfinished
    ],
)
def test_a_stream_that_ends_before_its_last_response_is_an_engine_error(events):
    """Triton's generate_stream can end a reply with a response unwritten (llm_client._generate says when): the
    answer is incomplete, and the caller hears so instead of taking it as whole."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=sse(events), headers={"content-type": "text/event-stream"})

    with pytest.raises(EngineError) as lost:
        collect(client(handler))
    assert lost.value.message == LOST_FINAL
