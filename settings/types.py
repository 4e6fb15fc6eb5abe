"""Value types shared by the settings sections: each refuses, naming the key (pydantic reports the field),
what merely looks right.

``HttpUrl``: a base URL the program renders into a Job's arguments or a ConfigMap (verification.url,
verification.prometheusUrl, loadTest.url). It is checked on the raw value, before whitespace is stripped:
``http``/``https`` only, a host (a DNS name or an IP literal), an optional port 1-65535 and path, and nothing
else: no userinfo (credentials would be written into a manifest), no query or fragment, no whitespace or
control characters (a CR/LF survives ``urlsplit``'s checks and would split an argument or a header), none
of them percent-encoded, no shell metacharacters and nothing outside ASCII (write an IDN host in punycode).
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from typing import Annotated, Any

from pydantic import BeforeValidator

# RFC 3986 unreserved, ':' '/' '@' (so userinfo is reported as such), '%' for escapes, '[' ']' for IPv6,
# and the sub-delimiters that are not shell metacharacters.
_URL_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/@%\[\]+=,]*$")
_ENCODED_CONTROL = re.compile(r"%(?:[01][0-9A-Fa-f]|7[Ff]|20)")
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def _check_http_url(value: Any) -> Any:
    if not isinstance(value, str):
        return value  # pydantic reports the type
    bad = sorted({c for c in value if not _URL_CHARS.fullmatch(c)})
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        raise ValueError(
            f"expected an http(s) URL without whitespace, control characters, shell metacharacters, a query or a "
            f"fragment; it contains {shown}"
        )
    if _ENCODED_CONTROL.search(value):
        raise ValueError("expected an http(s) URL; it contains a percent-encoded control character or space")
    parts = urllib.parse.urlsplit(value)
    if parts.scheme not in ("http", "https") or not value.startswith(("http://", "https://")):
        raise ValueError("expected an http:// or https:// URL (lower-case scheme)")
    if "@" in parts.netloc:
        raise ValueError("expected an http(s) URL without credentials (user:password@); send them another way")
    host = parts.hostname
    if not host or not _host_ok(parts.netloc, host):
        raise ValueError("expected an http(s) URL with a host name or IP address: http(s)://host[:port][/path]")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("expected an http(s) URL whose port is a number 1-65535") from None
    if port == 0 or (port is None and parts.netloc.endswith(":")):
        raise ValueError("expected an http(s) URL whose port is a number 1-65535")
    if "@" in parts.path:
        raise ValueError("expected an http(s) URL without '@' in its path")
    return value


def _host_ok(netloc: str, host: str) -> bool:
    if netloc.startswith("["):
        try:
            return isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address)
        except ValueError:
            return False
    if "[" in netloc or "]" in netloc or "%" in host:
        return False
    try:
        ipaddress.IPv4Address(host)
        return True
    except ValueError:
        pass
    labels = host.rstrip(".").split(".")
    return len(host) <= 253 and all(_LABEL.fullmatch(label) for label in labels) and not labels[-1].isdigit()


HttpUrl = Annotated[str, BeforeValidator(_check_http_url)]
"""A strict http(s) base URL (see the module docstring); the field's key names the problem."""


SHELL_SAFE = re.compile(r"^[A-Za-z0-9\-._~:/@%+=,]*$")
"""What a value may hold when it reaches a command line or a shell (a container's command and arguments, the
worker's ``sh -c`` stage script, ``mpirun``'s remote ``sh -c``): letters, digits and ``-._~:/@%+=,``. Every
shell metacharacter (`` ` $ ; & | < > ( ) \\ " ' * ? [ ] { } ! # ^``), whitespace and control characters
are refused: quoted today, a value can still meet an unquoted expansion in a script tomorrow."""


def _check_shell_word(value: Any) -> Any:
    if not isinstance(value, str):
        return value  # pydantic reports the type
    bad = sorted({c for c in value if not SHELL_SAFE.fullmatch(c)})
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        raise ValueError(
            f"expected letters, digits and -._~:/@%+=, only (the value reaches a command line); it contains {shown}"
        )
    return value


ShellWord = Annotated[str, BeforeValidator(_check_shell_word)]
"""A string that reaches a command line or a shell: :data:`SHELL_SAFE` characters only, the key named."""
