"""TEST DOUBLE: KV-cache block reuse as bookkeeping: which full prompt blocks an earlier request left cached.

A block is ``tokens_per_block`` prompt tokens, keyed by a hash of itself and every block before it (a block is
reusable only after the same prefix). As in TensorRT-LLM, only full blocks are reused and the last prompt
token is always computed, so a prompt of n tokens reuses at most (n - 1) // tokens_per_block blocks. The
cache holds at most ``capacity`` blocks, least recently used out first.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence


class BlockCache:
    def __init__(self, tokens_per_block: int, capacity: int) -> None:
        self.tokens_per_block = tokens_per_block
        self.capacity = capacity
        self._blocks: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def admit(self, prompt: Sequence[int]) -> int:
        """Reused blocks for ``prompt``; its full blocks are cached afterwards."""
        keys = self._keys(prompt)
        reusable = (len(prompt) - 1) // self.tokens_per_block if prompt else 0
        with self._lock:
            reused = 0
            for key in keys[:reusable]:
                if key not in self._blocks:
                    break
                reused += 1
            for key in keys:
                self._blocks[key] = None
                self._blocks.move_to_end(key)
            while len(self._blocks) > self.capacity:
                self._blocks.popitem(last=False)
        return reused

    def _keys(self, prompt: Sequence[int]) -> list[bytes]:
        keys, digest = [], hashlib.sha256()
        full = len(prompt) // self.tokens_per_block
        for i in range(full):
            block = prompt[i * self.tokens_per_block : (i + 1) * self.tokens_per_block]
            digest.update(b"".join(t.to_bytes(4, "little") for t in block))
            keys.append(digest.copy().digest())
        return keys
