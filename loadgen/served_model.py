"""The model id a client sends, as the server lists it (``GET /v1/models``): what ``loadtest`` and ``verify`` ask
for when no ``--model`` is given, so the load never names a model the server would answer 404 for."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping

from inference_platform.catalog.serving_contract import OPENAI_MODELS_PATH
from inference_platform.loadgen.connection_errors import describe


class NoServedModel(Exception):
    """The endpoint listed no model; the message says what it answered."""


def served_models(
    url: str, headers: Mapping[str, str], *, ca_file: str | None = None, timeout: float = 10.0
) -> list[str]:
    """The ids ``<url>/v1/models`` lists, in its order."""
    context = ssl.create_default_context(cafile=ca_file) if url.startswith("https://") else None
    request = urllib.request.Request(url.rstrip("/") + OPENAI_MODELS_PATH, headers=dict(headers), method="GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            listed = [m["id"] for m in json.loads(response.read())["data"]]
    except urllib.error.HTTPError as err:
        raise NoServedModel(f"GET {OPENAI_MODELS_PATH} answered HTTP {err.code}") from None
    except OSError as err:
        raise NoServedModel(f"GET {OPENAI_MODELS_PATH} failed: {describe(url, err, ca_file)}") from None
    except (ValueError, KeyError, TypeError) as err:
        raise NoServedModel(f"GET {OPENAI_MODELS_PATH} failed: {type(err).__name__}: {err}") from None
    if not listed:
        raise NoServedModel(f"GET {OPENAI_MODELS_PATH} lists no model")
    return listed
