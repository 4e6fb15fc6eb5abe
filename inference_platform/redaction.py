"""Credentials in text: found and replaced before anything is printed or written (issue 28).

A setting's value reaches people through many paths: a settings problem (``got 'https://user:token@...'``),
a component's argument error, a policy violation, the plan's JSON and Markdown (the PR comment), the
rendered manifests, the program's log lines and every ``inferctl`` error. Each of those paths passes its
text through :func:`scrub`, and the settings refuse a plain value that :func:`carries_credential` (a
credential belongs in a secret key), so the value never reaches a path that forgets.

What counts as a credential, each kind replaced by ``[redacted]`` and its surroundings kept so the reader
still sees which value is meant:

- URL userinfo: ``scheme://user:password@host`` and ``scheme://token@host`` (RFC 3986 §3.2.1; the userinfo
  form is deprecated there precisely because it is printed), and a scheme-less ``user:password@host``;
- URL query parameters whose name says secret (``?X-Amz-Signature=...``, ``?access_token=...``, ``?sig=``,
  ``?key=``): pre-signed URLs carry their credentials there; the name is kept, the value hidden;
- ``name=value`` pairs whose name ends in a secret word (``DB_PASSWORD=...``, ``hfToken=...``, ``api_key=...``);
- ``Authorization``-style schemes (``Bearer <token>``, ``Basic <base64>``);
- tokens of a known shape: AWS access key ids (``AKIA``/``ASIA``...), GitHub (``ghp_``, ``github_pat_``),
  Hugging Face (``hf_``), NVIDIA NGC (``nvapi-``), OpenAI-style (``sk-``), Slack (``xox?-``), PEM private keys.

Pure, no dependencies: the settings, the catalog and the program import it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

REDACTED = "[redacted]"

# ``name=value`` outside URLs: a name ending in one of these words (``DB_PASSWORD=x``, ``hfToken=x``).
_PAIR_NAMES = r"pass(?:word|wd|phrase)|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?"
# A URL's query parameter whose name holds one of these (``X-Amz-Signature``, ``access_token``, ``sig``, ``key``).
_QUERY_NAMES = re.compile(rf"{_PAIR_NAMES}|signature|sig|key|auth|session|code|credential", re.IGNORECASE)
# scheme://userinfo@ : everything between '//' and the last '@' before the host's end.
_URL_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#\s'\"@]*@)+")
# user:password@host without a scheme (an SSH-style or mistyped URL); an e-mail address has no ':' before '@'.
_BARE_USERINFO = re.compile(r"(?<![\w/.:@-])(?P<user>[\w.\-~%!$&*+]+):(?P<password>[^\s/@'\"]+)@(?=[\w\[])")
_QUERY_VALUE = re.compile(r"(?P<sep>[?&;])(?P<name>[^=&;#\s'\"?]+)=(?P<value>[^&;#\s'\"]*)")
_SECRET_PAIR = re.compile(
    rf"(?P<name>\b[\w.\-]*(?:{_PAIR_NAMES}))(?P<sep>\s*=\s*)(?!\[redacted\])(?P<value>[^\s,;&'\"}}\])]+)", re.IGNORECASE
)
_AUTH_SCHEME = re.compile(
    r"\b(?P<scheme>Bearer|Basic|Token|Digest)\s+(?P<value>[A-Za-z0-9\-._~+/]{8,}=*)", re.IGNORECASE
)
_SHAPED = re.compile(
    r"(?:(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|APKA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bhf_[A-Za-z0-9]{20,}"
    r"|\bnvapi-[A-Za-z0-9_\-]{20,}"
    r"|\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_\-]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$))"
)


def _query(match: re.Match[str]) -> str:
    if match["value"] in ("", REDACTED) or not _QUERY_NAMES.search(match["name"]):
        return match.group(0)
    return f"{match['sep']}{match['name']}={REDACTED}"


def _queries(text: str) -> str:
    """Query values inside URL-looking tokens only (``key=value`` prose elsewhere is the pair rule's)."""

    def one(token: re.Match[str]) -> str:
        word = token.group(0)
        head, mark, rest = word.partition("?")
        if not mark or ("://" not in head and "/" not in head):
            return word
        return head + _QUERY_VALUE.sub(_query, mark + rest)

    return re.sub(r"[^\s'\"<>()\[\]{}]+", one, text)


_STEPS: tuple[Callable[[str], str], ...] = (
    lambda t: _SHAPED.sub(REDACTED, t),
    lambda t: _URL_USERINFO.sub(lambda m: f"{m['head']}{REDACTED}@", t),
    lambda t: _BARE_USERINFO.sub(lambda m: f"{REDACTED}@", t),
    _queries,
    lambda t: _SECRET_PAIR.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}", t),
    lambda t: _AUTH_SCHEME.sub(lambda m: f"{m['scheme']} {REDACTED}", t),
)


def scrub(text: str) -> str:
    """``text`` with every credential (see the module docstring) replaced by ``[redacted]``."""
    if not text:
        return text
    for step in _STEPS:
        text = step(text)
    return text


def carries_credential(text: str) -> bool:
    """Whether :func:`scrub` would change ``text``: it holds something printed as a credential."""
    return isinstance(text, str) and scrub(text) != text


def scrub_value(value: Any) -> Any:
    """``value`` (plain JSON-like data) with :func:`scrub` applied to every string in it, keys included."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub_value(k): scrub_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(scrub_value(v) for v in value)
    return value


class ScrubbingWriter:
    """A text stream that scrubs what passes through it, a line at a time (a credential split across two
    ``write`` calls of one line is still seen whole); ``flush`` lets a partial line through, scrubbed.
    ``inferctl`` puts its standard streams behind one, so no command prints a credential, whatever it
    prints. Everything else (``fileno``, ``isatty``, ``encoding`` ...) is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            head, _, self._pending = self._pending.rpartition("\n")
            self._stream.write(scrub(head + "\n"))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(scrub(self._pending))
            self._pending = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
