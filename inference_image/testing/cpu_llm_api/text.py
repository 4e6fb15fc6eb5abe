"""TEST DOUBLE: what the stand-in says — the last text of the prompt — and how its text grows token by token."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence

ROLE_WORDS = frozenset({"system", "user", "assistant", "developer", "tool", "ipython"})
"""Role headers a chat template writes between special tokens; never what the stand-in echoes."""


def echo_text(prompt: str, special_tokens: Iterable[str]) -> str:
    """The last stretch of the prompt between special tokens that is not blank or a role header (the last
    user message of a chat prompt); a prompt without special tokens is echoed whole."""
    tokens = sorted((t for t in special_tokens if t), key=len, reverse=True)
    pieces = re.split("|".join(re.escape(t) for t in tokens), prompt) if tokens else [prompt]
    for piece in reversed(pieces):
        text = piece.strip()
        if text and text.lower() not in ROLE_WORDS:
            return text
    return prompt.strip() or "ok"


def sampled(text: str, rng: random.Random) -> str:
    """The words of ``text`` in an order the request's seed decides (what sampling changes)."""
    words = text.split(" ")
    rng.shuffle(words)
    return " ".join(words)


class Detokenizer:
    """Cumulative text of a growing token list; a character whose UTF-8 bytes are not all there yet waits."""

    def __init__(self, tokenizer: object, skip_special_tokens: bool) -> None:
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self.text = ""

    def update(self, token_ids: Sequence[int]) -> str:
        text = self._tokenizer.decode(list(token_ids), skip_special_tokens=self._skip)  # type: ignore[attr-defined]  # any tokenizer with decode()
        if not text.endswith("\ufffd"):
            self.text = text
        return self.text


def apply_stop(text: str, stops: Sequence[str], *, include: bool) -> tuple[str, str | None]:
    """``text`` cut at the first stop string it contains (kept when ``include``), and that string."""
    hits = [(text.find(s), s) for s in stops if s and s in text]
    if not hits:
        return text, None
    at, stop = min(hits)
    return (text[: at + len(stop)] if include else text[:at]), stop


def releasable(text: str, stops: Sequence[str]) -> str:
    """``text`` less any end that could still grow into a stop string: a stream never shows text a stop string
    then takes back (the longest suffix that is a proper prefix of a stop string waits)."""
    keep = 0
    for stop in stops:
        for n in range(min(len(stop) - 1, len(text)), 0, -1):
            if text.endswith(stop[:n]):
                keep = max(keep, n)
                break
    return text[: len(text) - keep]
