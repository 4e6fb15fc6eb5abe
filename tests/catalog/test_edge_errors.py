"""The edge's 413 states the limit (issue 28: "Request body too large for this endpoint." said neither the limit nor
where it applies): the message comes from the policy, one definition both renderings carry (the Envoy Gateway
``responseOverride`` and the local Envoy's local-reply mapper). The live refusal is in
tests/inferctl/serving/test_local_edge.py."""

from __future__ import annotations

import dataclasses
import json

from inference_platform.catalog.edge_policy import BODY_TOO_LARGE_STATUS, edge_error, request_body_limit
from inference_platform.components.batch.edge_routes import route_group
from inference_platform.inferctl.serving.edge_custom_response import replies
from tests.components.edge.test_edge_abuse_upstream import backend_policies, objects, policy
from tests.components.edge.test_gateway_api import bootstrap


def _message(body: str) -> str:
    return str(json.loads(body)["error"]["message"])


def test_the_413_names_the_limit_and_the_paths_it_applies_to():
    for tokens, limit in ((4096, "196,608 bytes (192 KiB)"), (8192, "327,680 bytes (320 KiB)")):
        message, kind, code = edge_error(BODY_TOO_LARGE_STATUS, policy(tokens))
        assert f"{request_body_limit(tokens):,}" in message and limit in message
        assert "POST /v1/chat/completions and /v1/completions" in message
        assert (kind, code) == ("invalid_request_error", "request_too_large")
    # The batch routes are not buffered at the edge (the Batch API refuses an upload over its own limit): not named.
    with_batch = dataclasses.replace(policy(), extra_routes=(route_group(),))
    assert "/v1/files" not in edge_error(BODY_TOO_LARGE_STATUS, with_batch)[0]


def test_both_renderings_carry_the_same_413():
    pol = policy(8192)
    expected = edge_error(BODY_TOO_LARGE_STATUS, pol)[0]
    gateway, _ = backend_policies(objects(pol))
    (override,) = [
        o for o in gateway["spec"]["responseOverride"] if o["match"]["statusCodes"][0]["value"] == BODY_TOO_LARGE_STATUS
    ]
    assert _message(override["response"]["body"]["inline"]) == expected
    hcm = bootstrap(pol)["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    assert _message(replies(hcm["http_filters"][0])[BODY_TOO_LARGE_STATUS]["body"]) == expected
