"""One sentence for a request that never got an answer, saying what to do: above all a certificate the client does
not trust (a local edge's CA not passed), where Python's own words (``CERTIFICATE_VERIFY_FAILED``, or an openai
client's bare ``APIConnectionError: Connection error.``) name no fix.

smoke, verify and loadtest reach an endpoint through urllib or http.client and report with this; how a client
program trusts the local CA is docs/serve-local.md.
"""

from __future__ import annotations

import ssl
import urllib.error

TRUST_HINT = (
    "pass --ca-file with the CA that signed it (serve-local prints its CA's path: <work-dir>/edge/tls/ca.pem; "
    "docs/serve-local.md says how a client trusts it)"
)


def describe(url: str, err: BaseException, ca_file: str | None) -> str:
    """``url``: why no answer came, and the fix where there is one."""
    cause: object = err.reason if isinstance(err, urllib.error.URLError) else err
    if isinstance(cause, ssl.SSLCertVerificationError):
        detail = cause.verify_message or cause.reason or str(cause)
        if ca_file:
            return (
                f"{url}: the server's certificate does not verify against --ca-file {ca_file} ({detail}): pass the "
                "CA that signed it (a serve-local work dir's edge/tls/ca.pem belongs to that work dir's edge)"
            )
        return f"{url}: the server's certificate is not trusted ({detail}): {TRUST_HINT}"
    if isinstance(cause, ssl.SSLError):
        if "WRONG_VERSION_NUMBER" in str(cause) or "record layer failure" in str(cause):
            return f"{url}: TLS failed ({cause.reason}): the server speaks plain HTTP there; use http://"
        return f"{url}: TLS failed ({cause.reason or cause})"
    if isinstance(cause, ConnectionRefusedError):
        return f"{url}: connection refused: nothing listens there (is the server, or serve-local, running?)"
    # http.client's RemoteDisconnected is a ConnectionResetError: what an https listener does to a plain request.
    if isinstance(cause, ConnectionResetError | ConnectionAbortedError):
        hint = "; an https endpoint (the edge) needs https://" if url.startswith("http://") else ""
        return f"{url}: the connection was closed without an answer ({cause}){hint}"
    return f"{url}: {cause}"
