"""The one shape every client of ours sends an API key in: ``Authorization: Bearer <key>`` or ``<header>: <key>``.

The edge reads a key from the configured header (``edge.auth.header``, ``x-api-key``) or else from
``Authorization`` (Envoy's api_key_auth strips a leading ``Bearer `` itself: envoy ``api_key_auth.proto``
KeySource.header at v1.39.0, which Envoy Gateway v1.9.0 deploys; tests/inferctl/serving/test_local_edge.py
shows it on the real Envoy). Under ``authorization`` the key goes as a bearer token, the OpenAI convention
every OpenAI client follows; under any other header it goes raw. Smoke checks, ``verify`` and the load
generator all build their headers here and cannot disagree.
"""

from __future__ import annotations

AUTHORIZATION = "authorization"
BEARER = "Bearer "


def api_key_headers(header: str, key: str | None) -> dict[str, str]:
    """``{header: key}`` (header lower-cased, as HTTP/2 carries it; ``Bearer <key>`` under ``authorization``),
    or ``{}`` without a key."""
    if not key:
        return {}
    name = header.lower()
    return {name: BEARER + key if name == AUTHORIZATION else key}
