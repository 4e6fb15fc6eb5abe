"""TensorRT-LLM's word-list tensors (``stop_words_list``, ``bad_words_list``).

Layout per request, shape ``[2, N]``: row 0 holds every word's token ids back to back (zero padded),
row 1 the cumulative end offset of each word (padded with -1). Batched: ``[batch, 2, N]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def to_word_list_format(batch: Sequence[Sequence[Sequence[int]]]) -> np.ndarray:
    """``batch[i]`` lists request i's words as token-id sequences (empty words are dropped)."""
    flat: list[list[int]] = []
    offsets: list[list[int]] = []
    for words in batch:
        ids: list[int] = []
        ends: list[int] = []
        for word in words:
            if not word:
                continue
            ids.extend(int(t) for t in word)
            ends.append(len(ids))
        flat.append(ids)
        offsets.append(ends)
    width = max(1, *(len(ids) for ids in flat)) if flat else 1
    out = np.zeros((len(flat), 2, width), dtype=np.int32)
    out[:, 1, :] = -1
    for i, (ids, ends) in enumerate(zip(flat, offsets, strict=True)):
        out[i, 0, : len(ids)] = ids
        out[i, 1, : len(ends)] = ends
    return out


def from_word_list(tensor: np.ndarray | None) -> list[list[int]]:
    """The words of one request's ``[2, N]`` (or ``[1, 2, N]``) tensor; None or empty gives []."""
    if tensor is None or tensor.size == 0:
        return []
    array = np.asarray(tensor)
    if array.ndim == 3:
        if array.shape[0] != 1:
            raise ValueError(f"word list for one request must have batch 1, got shape {array.shape}")
        array = array[0]
    if array.ndim != 2 or array.shape[0] != 2:
        raise ValueError(f"word list must have shape [2, N], got {array.shape}")
    ids, ends = array[0].tolist(), array[1].tolist()
    words = []
    start = 0
    for end in ends:
        if end < 0:
            break
        if not start < end <= len(ids):
            raise ValueError(f"word list offsets {ends} do not fit {len(ids)} token ids")
        words.append([int(t) for t in ids[start:end]])
        start = end
    return words
