"""A labelled stand-in for the serving endpoint the batch workers call, kept only for the fault tests the real
local stack cannot produce (tests/batch/test_lane_faults.py): OpenAI chat completions (plain and streamed) with a
server's limits, nothing more. The shedding proof and a worker's end (SIGKILL, SIGTERM) run on the real stack
(test_lane_shedding.py, test_lane_worker_stops.py); the end-to-end lane test too (test_lane_edge.py).

Faithful where the lane's tests look: the request and response shapes of ``/v1/chat/completions`` (``id``,
``choices[0].message``, ``usage``; SSE chunks ending ``data: [DONE]``), answers fixed by (prompt, seed,
max_tokens) like a seeded sampler, a fixed number of generation slots, and waiting/running gauges on
``/metrics``. A prompt containing ``ALWAYS-FAIL`` gets a 500, a stand-in for a request that crashes its server
every time: the one failure the real server cannot be made to give a valid request. Its limit: no model behind
it; the words are a hash of the request.

``python -m tests.batch.openai_stand_in --port P [--slots N] [--token-ms T] [--first-token-ms F]``
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time

from aiohttp import web

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima")
FAIL_MARKER = "ALWAYS-FAIL"


def answer_words(prompt: str, seed: int | None, max_tokens: int) -> list[str]:
    digest = hashlib.sha256(f"{seed}|{max_tokens}|{prompt}".encode()).digest()
    return [WORDS[digest[i % len(digest)] % len(WORDS)] for i in range(max_tokens)]


def prompt_of(body: dict) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if isinstance(m, dict))


class StandIn:
    def __init__(self, slots: int, token_ms: float, first_token_ms: float) -> None:
        self.slots = asyncio.Semaphore(slots)
        self.token_s = token_ms / 1000
        self.first_s = first_token_ms / 1000
        self.waiting = 0
        self.running = 0
        self.served = 0

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompt = prompt_of(body)
        if FAIL_MARKER in prompt:
            return web.json_response(
                {"error": {"message": "stand-in failure", "type": "server_error", "param": None, "code": None}},
                status=500,
            )
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        words = answer_words(prompt, body.get("seed"), max_tokens)
        created = int(time.time())
        rid = "chatcmpl-" + hashlib.sha256(f"{time.time_ns()}{prompt}".encode()).hexdigest()[:24]
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(words),
                 "total_tokens": len(prompt.split()) + len(words), "prompt_tokens_details": {"cached_tokens": 0}}  # fmt: skip
        self.waiting += 1
        async with self.slots:
            self.waiting -= 1
            self.running += 1
            try:
                await asyncio.sleep(self.first_s)
                if body.get("stream"):
                    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
                    await response.prepare(request)
                    for index, word in enumerate(words):
                        if index:
                            await asyncio.sleep(self.token_s)
                        chunk = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": body["model"],
                                 "choices": [{"index": 0, "delta": {"content": (" " if index else "") + word}, "finish_reason": None}]}  # fmt: skip
                        await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    final = {"id": rid, "object": "chat.completion.chunk", "created": created, "model": body["model"],
                             "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}], "usage": usage}  # fmt: skip
                    await response.write(f"data: {json.dumps(final)}\n\ndata: [DONE]\n\n".encode())
                    await response.write_eof()
                    return response
                await asyncio.sleep(self.token_s * max(0, len(words) - 1))
            finally:
                self.running -= 1
                self.served += 1
        return web.json_response(
            {
                "id": rid,
                "object": "chat.completion",
                "created": created,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": " ".join(words)},
                        "finish_reason": "length",
                    }
                ],
                "usage": usage,
            }
        )

    async def metrics(self, _request: web.Request) -> web.Response:
        text = (
            "# TYPE stand_in_pending_requests gauge\n"
            f'stand_in_pending_requests{{model="stand-in"}} {self.waiting}\n'
            "# TYPE stand_in_running_requests gauge\n"
            f'stand_in_running_requests{{model="stand-in"}} {self.running}\n'
            "# TYPE stand_in_served_requests counter\n"
            f'stand_in_served_requests_total{{model="stand-in"}} {self.served}\n'
        )
        return web.Response(text=text, content_type="text/plain")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--token-ms", type=float, default=5)
    parser.add_argument("--first-token-ms", type=float, default=20)
    args = parser.parse_args()
    stand_in = StandIn(args.slots, args.token_ms, args.first_token_ms)
    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", stand_in.chat), web.get("/metrics", stand_in.metrics),
                    web.get("/health", lambda _r: web.Response(text="ok"))])  # fmt: skip
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
