"""What the load test's prompt words cost in the served model's tokenizer, asked of the server itself.

The served ``preprocessing`` model tokenizes exactly as the server will (its tokenizer, its special
tokens) and returns ``REQUEST_INPUT_LEN``: each of ``requests.WORDS`` is sent once with its leading
space, and once a one-character prompt, whose length less one is the special tokens added to every
prompt. Where ``preprocessing`` is not reachable (a public edge admits only the inference routes)
the sizing stays "assumed" and prompts are clamped as if every byte were a token.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import replace

from inference_platform.loadgen.config import PromptSizing
from inference_platform.loadgen.requests import WORDS

PREPROCESSING = "preprocessing"


class _Unmeasurable(Exception):
    pass


def measure_sizing(
    url: str,
    *,
    headers: Mapping[str, str],
    limits: PromptSizing,
    ca_file: str | None = None,
    timeout: float = 10.0,
) -> PromptSizing:
    """``limits`` with the served tokenizer's word costs, or unchanged but for ``source`` when unmeasurable."""
    context = ssl.create_default_context(cafile=ca_file) if url.startswith("https://") else None
    try:
        one_char = _input_len(url, "x", headers, context, timeout)
        words = tuple(_input_len(url, " " + word, headers, context, timeout) for word in WORDS)
    except _Unmeasurable as err:
        return replace(limits, word_tokens=(), special_tokens=0, source=f"assumed ({err})")
    special = max(0, one_char - 1)
    return replace(
        limits, word_tokens=tuple(max(1, n - special) for n in words), special_tokens=special, source=PREPROCESSING
    )


def _input_len(url: str, text: str, headers: Mapping[str, str], context: ssl.SSLContext | None, timeout: float) -> int:
    body = {
        "inputs": [
            {"name": "QUERY", "datatype": "BYTES", "shape": [1, 1], "data": [text]},
            {"name": "REQUEST_OUTPUT_LEN", "datatype": "INT32", "shape": [1, 1], "data": [1]},
        ],
        "outputs": [{"name": "REQUEST_INPUT_LEN"}],
    }
    request = urllib.request.Request(
        url.rstrip("/") + f"/v2/models/{PREPROCESSING}/infer",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            answer = json.loads(response.read())
        output = next(o for o in answer["outputs"] if o["name"] == "REQUEST_INPUT_LEN")
        return int(output["data"][0])
    except urllib.error.HTTPError as err:
        raise _Unmeasurable(f"{PREPROCESSING} answered HTTP {err.code}") from None
    except (OSError, ValueError, KeyError, StopIteration, IndexError, TypeError) as err:
        raise _Unmeasurable(f"{PREPROCESSING} not measurable: {type(err).__name__}") from None
