"""A byte-level BPE tokenizer's tokens as the bytes they stand for.

Byte-level BPE (GPT-2's scheme, used by Llama 3 and by the stand-in's test tokenizer) writes each byte as one
printable character; ``byte_of_char`` undoes that mapping, built the way GPT-2's encoder defines it. The OpenAI
server reports a token's exact bytes in ``logprobs`` with it; the CPU stand-in indexes guided decoding over them.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def byte_of_char() -> dict[str, int]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def bytes_of_token(tokenizer: Any, token_id: int) -> bytes | None:
    """The bytes one token stands for (None for a special token or a tokenizer that is not byte-level)."""
    piece = tokenizer.id_to_token(token_id)
    mapping = byte_of_char()
    if piece is None or any(ch not in mapping for ch in piece):
        return None
    return bytes(mapping[ch] for ch in piece)


def token_bytes(tokenizer: Any) -> dict[int, bytes]:
    """Every non-special token id of a ``tokenizers.Tokenizer`` with the bytes it decodes to."""
    mapping = byte_of_char()
    special = {t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special}
    out = {}
    for token, ident in tokenizer.get_vocab(with_added_tokens=False).items():
        if token in special or any(ch not in mapping for ch in token):
            continue
        out[ident] = bytes(mapping[ch] for ch in token)
    if not out:
        raise ValueError("the CPU stand-in's guided decoding needs a byte-level BPE tokenizer")
    return out
