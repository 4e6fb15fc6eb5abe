"""A request that gets no answer says why and what to do (issue 28: a client that did not trust the local CA saw
only ``APIConnectionError``): against real listeners on 127.0.0.1, an https one with serve-local's certificate and a
plain one, through the calls smoke, verify and loadtest make (``served_models``: loadtest's and verify's first call;
smoke's ``open_request``)."""

from __future__ import annotations

import contextlib
import http.server
import ssl
import threading
from collections.abc import Iterator

import pytest

from inference_platform.inferctl.serving import edge_tls
from inference_platform.inferctl.serving.smoke_openai import Endpoint, SmokeFailure, get
from inference_platform.loadgen.served_model import NoServedModel, served_models
from inference_platform.processes import LOOPBACK


class _Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"object": "list", "data": [{"id": "m"}]}'
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def _server(certificates: edge_tls.LocalCertificates | None) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), _Models)
    if certificates is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certificates.certificate, certificates.private_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def tls(tmp_path):
    certificates = edge_tls.local_certificates(tmp_path / "edge" / "tls")
    with _server(certificates) as port:
        yield certificates, port


def test_the_local_ca_passed_is_trusted(tls):
    certificates, port = tls
    assert served_models(f"https://{LOOPBACK}:{port}", {}, ca_file=str(certificates.ca)) == ["m"]


def test_an_untrusted_certificate_names_the_flag_and_the_ca_file(tls):
    _, port = tls
    with pytest.raises(NoServedModel) as err:
        served_models(f"https://{LOOPBACK}:{port}", {})
    message = str(err.value)
    assert "the server's certificate is not trusted" in message and "--ca-file" in message
    assert "edge/tls/ca.pem" in message and "docs/serve-local.md" in message
    with pytest.raises(SmokeFailure) as smoke:
        get(Endpoint(f"https://{LOOPBACK}:{port}", {}, 5.0), "/health")
    assert str(smoke.value).startswith(f"GET https://{LOOPBACK}:{port}/health: the server's certificate is not trusted")


def test_another_work_dirs_ca_is_named_as_the_wrong_one(tls, tmp_path):
    _, port = tls
    other = edge_tls.local_certificates(tmp_path / "other")
    with pytest.raises(NoServedModel) as err:
        served_models(f"https://{LOOPBACK}:{port}", {}, ca_file=str(other.ca))
    assert f"does not verify against --ca-file {other.ca}" in str(err.value)


def test_the_wrong_scheme_either_way_is_named(tls):
    _, port = tls
    with pytest.raises(NoServedModel) as err:
        served_models(f"http://{LOOPBACK}:{port}", {})
    assert "an https endpoint (the edge) needs https://" in str(err.value)
    with _server(None) as plain, pytest.raises(NoServedModel) as err:
        served_models(f"https://{LOOPBACK}:{plain}", {})
    assert "the server speaks plain HTTP there; use http://" in str(err.value)


def test_the_documented_ways_for_the_openai_client_to_trust_the_local_ca(tls, monkeypatch):
    """docs/serve-local.md's recipes, at the versions the locks pin (openai 3.63.0, httpx2/httpcore2 2.17.0, httpx
    0.29.0): openai's client is httpx2's (``openai/_base_client.py`` ``DefaultHttpxClient``); httpcore2's
    ``_ssl.py`` ``default_ssl_context`` reads ``SSL_CERT_FILE`` (else, on Linux, the system's trust store, not
    certifi); httpx's ``_config.py`` ``create_ssl_context`` reads it too, and both deprecate ``verify=<str>`` for
    ``verify=ssl.create_default_context(cafile=...)``. Without either, the bare error the issue saw."""
    import httpx
    import openai

    certificates, port = tls
    base_url, ca = f"https://{LOOPBACK}:{port}/v1", str(certificates.ca)
    with pytest.raises(openai.APIConnectionError) as err:
        openai.OpenAI(base_url=base_url, api_key="k", max_retries=0).models.list()
    assert "CERTIFICATE_VERIFY_FAILED" in repr(err.value.__cause__)
    context = ssl.create_default_context(cafile=ca)
    client = openai.OpenAI(base_url=base_url, api_key="k", http_client=openai.DefaultHttpxClient(verify=context))
    assert [m.id for m in client.models.list()] == ["m"]
    with httpx.Client(verify=ssl.create_default_context(cafile=ca)) as plain:
        assert plain.get(f"{base_url}/models").status_code == 200
    monkeypatch.setenv("SSL_CERT_FILE", ca)
    assert [m.id for m in openai.OpenAI(base_url=base_url, api_key="k").models.list()] == ["m"]
    with httpx.Client() as plain:
        assert plain.get(f"{base_url}/models").status_code == 200
