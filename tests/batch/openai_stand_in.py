"""A labelled stand-in for the serving endpoint the batch workers call, kept only for the fault tests the real
local stack cannot produce (tests/batch/test_lane_faults.py): OpenAI chat completions (not streamed) with a
server's limits, nothing more. The shedding proof and a worker's end (SIGKILL, SIGTERM) run on the real stack
(test_lane_shedding.py, test_lane_worker_stops.py); the end-to-end lane test too (test_lane_edge.py).

Faithful where the lane's tests look: the request and response shapes of ``/v1/chat/completions`` (``id``,
``choices[0].message``, ``usage``), answers fixed by (prompt, seed, max_tokens) like a seeded sampler, and a
fixed number of generation slots (a line takes its time, so a cancel or an outage lands mid-batch). A prompt
containing ``ALWAYS-FAIL`` gets a 500, a stand-in for a request that crashes its server every time: the one
failure the real server cannot be made to give a valid request. Its limit: no model behind it; the words are a
hash of the request.

``python -m tests.batch.openai_stand_in --port P [--slots N] [--token-ms T] [--first-token-ms F]``
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
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

    async def chat(self, request: web.Request) -> web.Response:
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
        async with self.slots:
            await asyncio.sleep(self.first_s + self.token_s * max(0, len(words) - 1))
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--token-ms", type=float, default=5)
    parser.add_argument("--first-token-ms", type=float, default=20)
    args = parser.parse_args()
    stand_in = StandIn(args.slots, args.token_ms, args.first_token_ms)
    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", stand_in.chat), web.get("/health", lambda _r: web.Response(text="ok"))])  # fmt: skip
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
