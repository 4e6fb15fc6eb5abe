"""The one shape every inferctl client sends an API key in: ``<header>: <key>``, the raw key.

The two places that check it compare the header's whole value with the key: Envoy Gateway's
``SecurityPolicy.apiKeyAuth`` (it strips no ``Bearer `` prefix, even under ``authorization``) and, with
no edge, Triton's ``--http-restricted-api=<apis>:<header>=<key>``. A ``Bearer `` prefix would be a 401
from both, so no header name gets one; smoke checks, ``verify`` and the load generator all build their
headers here and cannot disagree.
"""

from __future__ import annotations


def api_key_headers(header: str, key: str | None) -> dict[str, str]:
    """``{header: key}`` (header lower-cased, as HTTP/2 and gRPC metadata carry it), or ``{}`` without a key."""
    return {header.lower(): key} if key else {}
