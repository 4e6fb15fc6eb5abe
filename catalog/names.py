"""Physical names that fit AWS's limits without losing what makes them unique.

A name that fits is returned unchanged, so stacks whose names already fit keep every physical name
(a changed name is a replacement in the cloud). A name that does not fit keeps as much of its start as
leaves room for ``-`` and a short hash of the *whole* name: two long names that share their first
characters (``...-us-east-1a-blue`` and ``...-us-east-1a-green``) still get different names, and the
result never ends on ``-`` (ElastiCache ids, ELB names and S3 buckets refuse a trailing hyphen).

Pure (no pulumi): the stack settings derive ``name_prefix`` with it, components derive shorter names
with it, and the ``aws-physical-names`` policy (policies/rules/names.py) checks what they produce.
"""

from __future__ import annotations

import hashlib

__all__ = ["HASH_LENGTH", "fit_name", "name_hash"]

HASH_LENGTH = 6
"""Hex digits of SHA-256 kept: 24 bits, so two names collide with odds of 1 in 16.7 million."""


def name_hash(name: str) -> str:
    """The first :data:`HASH_LENGTH` hex digits of SHA-256 of ``name`` (stable across runs and hosts)."""
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def fit_name(name: str, limit: int) -> str:
    """``name`` itself when it has at most ``limit`` characters, else ``<start>-<hash of name>``.

    ``<start>`` is the longest start of ``name`` that leaves room for the hash, without the hyphens it
    would end on (so no ``--`` is made either).
    """
    if limit <= HASH_LENGTH + 1:
        raise ValueError(f"limit {limit} leaves no room for a name and its {HASH_LENGTH}-character hash")
    if len(name) <= limit:
        return name
    start = name[: limit - HASH_LENGTH - 1].rstrip("-")
    return f"{start}-{name_hash(name)}" if start else name_hash(name)
