"""The Triton client (aiohttp) against a Triton double on loopback: a kept-alive connection Triton already closed is
retried once if nothing was answered (nothing ran), a 503 otherwise; the generate-extension events it reads, per read;
the key on every call; and a caller that stops reading ends the connection."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from inference_platform.inference_image.openai_api.errors import ApiError
from inference_platform.inference_image.openai_api.llm_client import LOST_FINAL, EngineError, TritonLlm, Update
from tests.own_loop import run_on_own_loop

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


DISCONNECT = None
"""A reply that is no reply: the connection closed after the request was read (a kept-alive one Triton had closed)."""


async def _triton(
    replies: list[list[bytes] | None], seen: list[dict], heads: list[bytes] | None = None
) -> tuple[asyncio.Server, set[asyncio.Task]]:
    """A Triton double on 127.0.0.1 that answers each request with the next reply: its chunks, each its own write and
    read (chunked encoding, a pause between), or DISCONNECT. It records each request's JSON body in ``seen``; the
    set holds its connections' tasks (``_stop``)."""
    replies = list(replies)
    handlers: set[asyncio.Task] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.add(asyncio.current_task())  # type: ignore[arg-type]
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))  # fmt: skip
                seen.append(json.loads(await reader.readexactly(length)))
                if heads is not None:
                    heads.append(head.lower())
                reply = replies.pop(0)
                if reply is DISCONNECT:
                    return
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                )
                for chunk in reply:
                    writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    await writer.drain()
                    await asyncio.sleep(0.05)
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0), handlers


async def _stop(server: asyncio.Server, handlers: set[asyncio.Task]) -> None:
    """Stop listening and let each connection's task end (the client has closed its side) before the loop closes."""
    server.close()
    await asyncio.wait_for(asyncio.gather(*handlers, return_exceptions=True), 5)


def collect(
    replies: list[list[bytes] | None],
    *,
    request_id: str | None = None,
    api_key: tuple[str, str] | None = None,
    heads: list[bytes] | None = None,
) -> tuple[list[Update], list[dict]]:
    """The updates TritonLlm makes of the double's replies, and the bodies it sent (their heads into ``heads``)."""
    seen: list[dict] = []

    async def run() -> list[Update]:
        server, handlers = await _triton(replies, seen, heads)
        llm = TritonLlm(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", "tensorrt_llm", api_key=api_key)
        try:
            return [u async for u in llm.generate({"text_input": "hi"}, request_id=request_id)]
        finally:
            await llm.close()
            await _stop(server, handlers)

    return run_on_own_loop(asyncio.wait_for(run(), 30)), seen


def test_a_stale_connection_before_any_answer_is_retried_once():
    updates, seen = collect([DISCONNECT, [sse(EVENTS)]])
    assert seen == [{"text_input": "hi"}] * 2
    # Both events arrived in one read: one update, the texts joined, the latest counts and finish reason.
    assert [u.delta for u in updates] == ["Hello"] and updates[-1].finish_reasons == ("stop",)
    assert updates[-1].output_tokens == (5,)


def test_events_in_separate_reads_stay_separate_updates():
    updates, _ = collect([[sse(EVENTS[:1]), sse(EVENTS[1:])]])
    assert [(u.delta, u.finish_reasons) for u in updates] == [("Hel", (None,)), ("lo", ("stop",))]


def test_vector_outputs_are_one_entry_per_sequence_and_the_request_id_goes_to_triton():
    events = [{"text_output": ["a", "b"], "finish_reason": ["length", "stop"], "num_input_tokens": 3,
               "num_output_tokens": [1, 1], "num_cached_tokens": 2, "queue_time_s": 0.25}]  # fmt: skip
    (update,), seen = collect([[sse(events)]], request_id="req-7")
    assert seen == [{"id": "req-7", "text_input": "hi"}]
    assert (update.deltas, update.finish_reasons, update.output_tokens) == (("a", "b"), ("length", "stop"), (1, 1))
    assert (update.cached_tokens, update.queue_seconds) == (2, 0.25)


def test_a_connection_that_keeps_failing_is_a_503():
    with pytest.raises(ApiError) as caught:
        collect([DISCONNECT, DISCONNECT])
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
    with pytest.raises(EngineError) as lost:
        collect([[sse(events)]])
    assert lost.value.message == LOST_FINAL


def test_the_key_goes_on_every_call_and_nothing_is_asked_compressed():
    heads: list[bytes] = []
    collect([[sse(EVENTS)]], api_key=("x-api-key", "secret-key-0123456789"), heads=heads)
    collect([[sse(EVENTS)]], heads=heads)
    assert b"x-api-key: secret-key-0123456789" in heads[0] and b"x-api-key" not in heads[1]
    assert all(b"content-type: application/json" in h and b"accept-encoding" not in h for h in heads)


def test_a_caller_that_stops_reading_closes_the_connection():
    """The connection ends with the caller's interest, never goes back to the pool: Triton cancels a request whose
    connection ends (llm_client's module docstring), and an abandoned generation must not run on."""

    async def run() -> bool:
        ended = asyncio.Event()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            handlers.add(asyncio.current_task())  # type: ignore[arg-type]
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = sse(EVENTS[:1])
            writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            await writer.drain()
            while await reader.read(4096):  # the request body, then EOF when the client closes
                pass
            ended.set()
            writer.close()

        handlers: set[asyncio.Task] = set()
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        llm = TritonLlm(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", "tensorrt_llm")
        try:
            async with contextlib.aclosing(llm.generate({"text_input": "hi"})) as updates:
                async for _ in updates:
                    break  # one update, then the caller goes away
            await asyncio.wait_for(ended.wait(), 5)
            return ended.is_set()
        finally:
            await llm.close()
            await _stop(server, handlers)

    assert run_on_own_loop(run())
