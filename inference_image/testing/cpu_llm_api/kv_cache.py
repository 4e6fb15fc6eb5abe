"""TEST DOUBLE: one replica's paged KV cache with prefix reuse, as TensorRT-LLM's block manager behaves to a caller.

Sizes and names are explicit because the scheduler work (issue 29) measures routing against them:

- a **block** holds ``tokens_per_block`` tokens (``KvCacheConfig.tokens_per_block``, default 32);
- the **pool** holds ``capacity_blocks`` blocks (``KvCacheConfig.max_tokens // tokens_per_block`` when set, else room
  for ``max_batch_size`` sequences of ``max_seq_len``: the GPU sizes it from free memory, which the stand-in has not);
- a finished sequence leaves its **full** blocks (prompt and generated tokens) in the pool as *cached* blocks, keyed by
  their tokens and every block before them (a block is reusable only after the same prefix);
- a new prompt **reuses** the longest chain of cached blocks matching its start, at most ``len(prompt) - 1`` tokens
  (the last prompt token is always computed), and with ``enable_partial_reuse`` (KvCacheConfig's default, true) also
  the matching first tokens of one more cached block (copied into a new block): ``cached_tokens`` is that exact count,
  not a multiple of the block size;
- cached blocks nobody references are evicted least recently used first, leaves before the prefixes they extend, only
  when an allocation needs room; a request that cannot get its blocks waits (the caller keeps it queued).

Counters (``stats()``, in every iteration's ``kvCacheStats`` as the executor reports them, and in the stand-in's state
file): ``reusedBlocks``/``missedBlocks``/``cacheHitRate`` over the full prompt blocks looked up, ``cachedTokens``,
``queriedTokens``, ``evictedBlocks``, ``allocTotalBlocks``/``allocNewBlocks``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

ROOT = 0
"""The parent key of a sequence's first block."""


@dataclass
class _Block:
    key: int
    parent: int
    tokens: tuple[int, ...]
    refs: int = 0


@dataclass
class Allocation:
    """What one admitted request holds: the cached blocks it references and its own new blocks."""

    shared: list[int]
    """Keys of the cached blocks reused (referenced while the request runs)."""
    own_blocks: int
    """New blocks allocated to it (its uncached prompt and its generation reserve)."""
    cached_tokens: int
    """Prompt tokens not computed: the reused full blocks, plus a partially reused block's matching tokens."""
    reused_blocks: int
    """Blocks counted as reused (full blocks, and the partial one when any)."""
    prompt_blocks: int
    """ceil(prompt / tokens_per_block): the blocks the prompt needs."""
    extra: dict[str, Any] = field(default_factory=dict)


class PrefixCache:
    def __init__(self, *, tokens_per_block: int, capacity_blocks: int, reuse: bool, partial_reuse: bool) -> None:
        if tokens_per_block < 1 or capacity_blocks < 1:
            raise ValueError("the KV cache needs tokens_per_block >= 1 and at least one block")
        self.tokens_per_block = tokens_per_block
        self.capacity_blocks = capacity_blocks
        self.reuse = reuse
        self.partial_reuse = partial_reuse and reuse
        self._blocks: OrderedDict[int, _Block] = OrderedDict()
        """Cached blocks, least recently used first."""
        self._children: dict[int, set[int]] = {}
        self._own = 0
        """Blocks allocated to running requests that are not cached blocks."""
        self._lock = threading.Lock()
        self.reused_blocks = 0
        self.missed_blocks = 0
        self.cached_tokens = 0
        self.queried_tokens = 0
        self.evicted_blocks = 0
        self.alloc_total_blocks = 0
        self.alloc_new_blocks = 0

    # -- what the executor asks --------------------------------------------------------------------------------
    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.tokens_per_block)

    def used_blocks(self) -> int:
        with self._lock:
            return self._used()

    def admit(self, prompt: Sequence[int], reserve_tokens: int) -> Allocation | None:
        """Blocks for a request whose prompt is ``prompt`` and which may hold ``reserve_tokens`` tokens in all; None
        when the pool cannot give them now (nothing is counted then: the request will ask again)."""
        tpb = self.tokens_per_block
        with self._lock:
            matched = self._match(prompt) if self.reuse else []
            cached = len(matched) * tpb
            partial = 0
            if self.partial_reuse:
                partial = self._partial(prompt, matched[-1] if matched else ROOT, len(matched))
            cached += partial
            need = self.blocks_for(max(reserve_tokens, len(prompt))) - len(matched)
            evictable = self._evictable(exclude=set(matched))
            if need > self._free() + evictable:
                return None
            while self._free() < need:
                self._evict_one(exclude=set(matched))
            for key in matched:
                block = self._blocks[key]
                block.refs += 1
                self._blocks.move_to_end(key)
            self._own += need
            prompt_blocks = self.blocks_for(len(prompt))
            full = len(prompt) // tpb
            reused = len(matched) + (1 if partial else 0)
            self.reused_blocks += reused
            self.missed_blocks += max(0, full - len(matched))
            self.cached_tokens += cached
            self.queried_tokens += len(prompt)
            self.alloc_total_blocks += prompt_blocks
            self.alloc_new_blocks += prompt_blocks - len(matched)
            return Allocation(
                shared=matched,
                own_blocks=need,
                cached_tokens=cached,
                reused_blocks=reused,
                prompt_blocks=prompt_blocks,
            )

    def grow(self, allocation: Allocation) -> bool:
        """One more block for a running request (MAX_UTILIZATION admits on the prompt only); False when none is free."""
        with self._lock:
            exclude = set(allocation.shared)
            if self._free() < 1 and not self._evictable(exclude):
                return False
            if self._free() < 1:
                self._evict_one(exclude)
            self._own += 1
            allocation.own_blocks += 1
            return True

    def release(self, allocation: Allocation, sequence: Sequence[int]) -> None:
        """The request ended: its references drop, and (with reuse) the full blocks of ``sequence`` (prompt and
        generated tokens) stay cached for the next request with the same prefix."""
        tpb = self.tokens_per_block
        with self._lock:
            for key in allocation.shared:
                block = self._blocks.get(key)
                if block is not None:
                    block.refs = max(0, block.refs - 1)
            own = allocation.own_blocks
            if self.reuse:
                parent = ROOT
                for i in range(len(sequence) // tpb):
                    tokens = tuple(sequence[i * tpb : (i + 1) * tpb])
                    key = _key(parent, tokens)
                    existing = self._blocks.get(key)
                    if existing is None or existing.tokens != tokens or existing.parent != parent:
                        if own <= 0:
                            break  # the sequence outgrew its reserve (cannot happen under no-evict); stop caching
                        if existing is not None:  # a hash collision: the older block leaves
                            self._drop(key)
                        self._blocks[key] = _Block(key, parent, tokens)
                        self._children.setdefault(parent, set()).add(key)
                        own -= 1  # this block stays, as a cached block
                    else:
                        self._blocks.move_to_end(key)
                    parent = key
            self._own -= allocation.own_blocks

    def stats(self) -> dict[str, Any]:
        """The counters, under TensorRT-LLM's kvCacheStats names where it has one."""
        with self._lock:
            used = self._used()
            looked_up = self.reused_blocks + self.missed_blocks
            return {
                "maxNumBlocks": self.capacity_blocks,
                "usedNumBlocks": used,
                "freeNumBlocks": self.capacity_blocks - used,
                "tokensPerBlock": self.tokens_per_block,
                "allocTotalBlocks": self.alloc_total_blocks,
                "allocNewBlocks": self.alloc_new_blocks,
                "reusedBlocks": self.reused_blocks,
                "missedBlocks": self.missed_blocks,
                "cacheHitRate": self.reused_blocks / looked_up if looked_up else 0.0,
                # The stand-in's own (no TensorRT-LLM name): what the scheduler work reads.
                "cachedBlocks": len(self._blocks),
                "cachedTokens": self.cached_tokens,
                "queriedTokens": self.queried_tokens,
                "evictedBlocks": self.evicted_blocks,
            }

    # -- bookkeeping -------------------------------------------------------------------------------------------
    def _used(self) -> int:
        return self._own + sum(1 for b in self._blocks.values() if b.refs > 0)

    def _free(self) -> int:
        return self.capacity_blocks - self._own - len(self._blocks)

    def _evictable(self, exclude: set[int]) -> int:
        return sum(1 for k, b in self._blocks.items() if b.refs == 0 and k not in exclude)

    def _evict_one(self, exclude: set[int]) -> None:
        """The least recently used cached block nobody references that no other cached block extends (a leaf),
        else the least recently used unreferenced one."""
        fallback = None
        for key, block in self._blocks.items():
            if block.refs or key in exclude:
                continue
            if not self._children.get(key):
                self._drop(key)
                self.evicted_blocks += 1
                return
            fallback = fallback if fallback is not None else key
        if fallback is None:
            raise RuntimeError("KV cache accounting: asked to evict with nothing evictable")
        self._drop(fallback)
        self.evicted_blocks += 1

    def _drop(self, key: int) -> None:
        block = self._blocks.pop(key)
        siblings = self._children.get(block.parent)
        if siblings is not None:
            siblings.discard(key)
            if not siblings:
                del self._children[block.parent]

    def _match(self, prompt: Sequence[int]) -> list[int]:
        tpb = self.tokens_per_block
        reusable = max(0, len(prompt) - 1) // tpb
        matched, parent = [], ROOT
        for i in range(reusable):
            tokens = tuple(prompt[i * tpb : (i + 1) * tpb])
            key = _key(parent, tokens)
            block = self._blocks.get(key)
            if block is None or block.tokens != tokens or block.parent != parent:
                break
            matched.append(key)
            parent = key
        return matched

    def _partial(self, prompt: Sequence[int], parent: int, full: int) -> int:
        """Tokens of the next block position that a cached block after ``parent`` shares with the prompt."""
        start = full * self.tokens_per_block
        limit = max(0, len(prompt) - 1 - start)
        rest = prompt[start : start + min(limit, self.tokens_per_block)]
        best = 0
        for key in self._children.get(parent, ()):
            tokens = self._blocks[key].tokens
            n = 0
            while n < len(rest) and tokens[n] == rest[n]:
                n += 1
            best = max(best, n)
        return best if best < self.tokens_per_block else 0


def _key(parent: int, tokens: tuple[int, ...]) -> int:
    return hash((parent, tokens)) or 1  # 0 is ROOT
