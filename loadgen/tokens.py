"""What the load test's prompt words cost in the served model's tokenizer, asked of the server itself.

The OpenAI server counts a request's prompt with the model's own tokenizer and chat template and returns the
count as ``usage.prompt_tokens``. A chat completion of one character (``max_tokens`` 1) gives what the chat
template and special tokens add to every prompt (its count less one); one of that character followed by each of
``requests.WORDS`` gives the word's cost (the difference). Through the edge this is an ordinary client request
(the public API), so the sizing is measured wherever the load goes; an endpoint that does not answer leaves it
"assumed", and prompts are then clamped as if every byte were a token.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import replace

from inference_platform.catalog.serving_contract import OPENAI_CHAT_PATH
from inference_platform.loadgen.config import PromptSizing
from inference_platform.loadgen.requests import WORDS

SOURCE = "usage.prompt_tokens"
PROBE = "x"


class _Unmeasurable(Exception):
    pass


def measure_sizing(
    url: str,
    *,
    model: str,
    headers: Mapping[str, str],
    limits: PromptSizing,
    ca_file: str | None = None,
    timeout: float = 10.0,
) -> PromptSizing:
    """``limits`` with the served tokenizer's word costs, or unchanged but for ``source`` when unmeasurable."""
    context = ssl.create_default_context(cafile=ca_file) if url.startswith("https://") else None
    try:
        base = _prompt_tokens(url, model, PROBE, headers, context, timeout)
        words = tuple(_prompt_tokens(url, model, f"{PROBE} {word}", headers, context, timeout) for word in WORDS)
    except _Unmeasurable as err:
        return replace(limits, word_tokens=(), special_tokens=0, source=f"assumed ({err})")
    return replace(
        limits,
        word_tokens=tuple(max(1, n - base) for n in words),
        special_tokens=max(0, base - 1),
        source=SOURCE,
    )


def _prompt_tokens(
    url: str, model: str, text: str, headers: Mapping[str, str], context: ssl.SSLContext | None, timeout: float
) -> int:
    body = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 1, "temperature": 0}
    request = urllib.request.Request(
        url.rstrip("/") + OPENAI_CHAT_PATH,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            answer = json.loads(response.read())
        return int(answer["usage"]["prompt_tokens"])
    except urllib.error.HTTPError as err:
        raise _Unmeasurable(f"{OPENAI_CHAT_PATH} answered HTTP {err.code}") from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise _Unmeasurable(f"{OPENAI_CHAT_PATH} not measurable: {type(err).__name__}") from None
