"""The engine's per-token logprobs in OpenAI's two shapes.

The model sends, per sequence and response, ``{"ids": [new token ids], "top": [[[id, logprob, rank], ...] per token]}``
(inference_image/llmapi/model.py); the values are the engine's raw-model logprobs (TorchSampler computes them before
temperature and top-k/top-p, shared/facts/engine.md section 1). A token's text is its decoding, its ``bytes`` the exact
bytes a byte-level BPE token stands for (a character split across tokens shows as U+FFFD in ``token``, whole in
``bytes``).

- chat: ``{"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}, ...]}]}``, the
  alternatives cut to ``top_logprobs`` (ordered by rank);
- completions: ``{"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}``.
"""

from __future__ import annotations

import json
from typing import Any

from inference_platform.inference_image.runtime.byte_level import bytes_of_token


class TokenText:
    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._cache: dict[int, tuple[str, list[int]]] = {}

    def __call__(self, token_id: int) -> tuple[str, list[int]]:
        found = self._cache.get(token_id)
        if found is None:
            raw = bytes_of_token(self._tokenizer, token_id)
            text = self._tokenizer.decode([token_id], skip_special_tokens=False)
            found = (text, list(raw if raw is not None else text.encode("utf-8")))
            if len(self._cache) < 200_000:
                self._cache[token_id] = found
        return found


def parse(entry: str | None) -> list[tuple[int, list[tuple[int, float, int | None]]]]:
    """The model's JSON for one sequence: ``[(token id, [(id, logprob, rank), ...]), ...]``."""
    if not entry:
        return []
    data = json.loads(entry)
    return [
        (int(t), [(int(a), float(b), c) for a, b, c in top]) for t, top in zip(data["ids"], data["top"], strict=False)
    ]


def chat_entries(
    positions: list[tuple[int, list[tuple[int, float, int | None]]]], top: int, text: TokenText
) -> list[dict[str, Any]]:
    out = []
    for token, alternatives in positions:
        chosen = next((lp for t, lp, _ in alternatives if t == token), alternatives[0][1] if alternatives else 0.0)
        token_text, raw = text(token)
        ranked = sorted(alternatives, key=lambda a: (a[2] is None, a[2] or 0, -a[1]))[:top]
        out.append(
            {
                "token": token_text,
                "logprob": chosen,
                "bytes": raw,
                "top_logprobs": [{"token": text(t)[0], "logprob": lp, "bytes": text(t)[1]} for t, lp, _ in ranked],
            }
        )
    return out


def completion_block(
    positions: list[tuple[int, list[tuple[int, float, int | None]]]], text: TokenText, offset: int
) -> dict[str, Any]:
    tokens, logprobs, tops, offsets = [], [], [], []
    for token, alternatives in positions:
        token_text = text(token)[0]
        tokens.append(token_text)
        logprobs.append(next((lp for t, lp, _ in alternatives if t == token), 0.0))
        tops.append({text(t)[0]: lp for t, lp, _ in alternatives})
        offsets.append(offset)
        offset += len(token_text)
    return {"tokens": tokens, "token_logprobs": logprobs, "top_logprobs": tops, "text_offset": offsets}
