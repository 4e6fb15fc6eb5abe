"""The in-pod API key is optional once the gateway checks keys; without it no key reaches tritonserver's argv."""

from __future__ import annotations

from pathlib import Path

from inference_platform.inference_image.server_args import Listen, rank0_args
from inference_platform.settings.base import CheckContext
from inference_platform.settings.edge import EdgeSettings

PROD = {"stack": "prod", "environment": "production", "region": None}


def _auth_problems(serving, **sections) -> list[str]:
    ctx = CheckContext(**PROD, sections=sections)
    return [str(p) for p in serving.problems(ctx) if p.path == "serving.auth.enabled"]


def test_production_needs_a_key_in_the_pod_or_at_the_gateway(serving):
    open_pod = serving["dev"].model_copy(update={"auth": serving["dev"].auth.model_copy(update={"enabled": False})})
    assert _auth_problems(open_pod) == [
        "serving.auth.enabled: production serves a public API: set true, or authenticate at the gateway "
        "(edge.auth.enabled)"
    ]
    gateway = EdgeSettings.model_validate({"domain": "api.example.com"})
    assert gateway.auth.enabled  # the edge checks API keys by default
    assert _auth_problems(open_pod, edge=gateway) == []
    no_gateway_auth = EdgeSettings.model_validate({"domain": "api.example.com", "auth": {"enabled": False}})
    assert len(_auth_problems(open_pod, edge=no_gateway_auth)) == 1
    # Without edge.domain there is no gateway at all, whatever edge.auth says.
    assert len(_auth_problems(open_pod, edge=EdgeSettings())) == 1


def test_without_the_in_pod_key_no_secret_is_on_the_command_line(serving):
    dev = serving["dev"]
    assert not dev.auth.enabled
    argv = rank0_args(dev, model_repository=Path("/repo"), models=["ensemble"], listen=Listen())
    assert not any(a.startswith(("--http-restricted-api", "--grpc-restricted-protocol")) for a in argv)
