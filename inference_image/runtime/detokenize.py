"""Incremental detokenization: text for streamed tokens that never splits a character.

Decoding each streamed token alone breaks characters whose UTF-8 bytes span tokens (and, for some
tokenizers, the spaces between words). Decoding everything so far and sending only the new suffix
avoids both; a suffix ending in U+FFFD (an incomplete character) is held back until it completes.
"""

from __future__ import annotations

from collections.abc import Sequence

from inference_platform.inference_image.runtime.tokenizer import Tokenizer

_INCOMPLETE = "\ufffd"


class IncrementalText:
    def __init__(self, tokenizer: Tokenizer, *, skip_special_tokens: bool) -> None:
        self._tokenizer = tokenizer
        self._skip = skip_special_tokens
        self._ids: list[int] = []
        self._sent = 0

    def add(self, ids: Sequence[int]) -> str:
        """Text the new tokens complete (possibly empty while a character is incomplete)."""
        self._ids.extend(int(i) for i in ids)
        text = self._tokenizer.decode(self._ids, skip_special_tokens=self._skip)
        if text.endswith(_INCOMPLETE):
            return ""
        return self._take(text)

    def flush(self) -> str:
        """Whatever is left at the end of the stream, incomplete characters included."""
        return self._take(self._tokenizer.decode(self._ids, skip_special_tokens=self._skip))

    def _take(self, text: str) -> str:
        new = text[self._sent :]
        self._sent = len(text)
        return new
