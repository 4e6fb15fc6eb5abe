"""The tritonserver command line per stack: ports, readiness, control mode, auth, MPI ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_platform.inference_image.server_args import (
    Listen,
    ServerArgsError,
    check_api_key,
    command,
    rank0_args,
    redacted,
)

REPO = Path("/tmp/inferctl/model_repository")
MODELS = ["preprocessing", "tensorrt_llm", "postprocessing", "stream_gate", "ensemble", "tensorrt_llm_bls"]
KEY = "k3y-0123456789abcdef"


def test_dev_runs_one_server_on_the_contract_ports(serving):
    argv = command(serving["dev"], tritonserver="tritonserver", model_repository=REPO, models=MODELS)
    assert argv[0] == "tritonserver"
    for flag in (
        f"--model-repository={REPO}",
        "--http-port=8000",
        "--grpc-port=8001",
        "--metrics-port=8002",
        "--http-address=0.0.0.0",
        "--strict-readiness=true",
        "--allow-metrics=true",
        "--metrics-interval-ms=1000",
        "--metrics-config=histogram_latencies=true",
        "--model-control-mode=none",
        "--exit-timeout-secs=549",  # the drain dev's longest stream needs (planners/drain.py)
    ):
        assert flag in argv, flag
    assert not any(a.startswith(("--http-restricted-api", "--load-model")) for a in argv)


def _with_auth(settings):
    """prod checks keys at its gateway; these tests are about Triton checking its own key."""
    return settings.model_copy(update={"auth": settings.auth.model_copy(update={"enabled": True})})


def test_auth_restricts_every_api_but_health_with_the_mounted_key(serving):
    args = rank0_args(_with_auth(serving["prod"]), model_repository=REPO, models=MODELS, api_key=KEY)
    restriction = (
        f"inference,metadata,model-config,model-repository,shared-memory,statistics,trace,logging:x-api-key={KEY}"
    )
    assert f"--http-restricted-api={restriction}" in args
    assert f"--grpc-restricted-protocol={restriction}" in args
    with pytest.raises(ServerArgsError, match="no API key"):
        rank0_args(_with_auth(serving["prod"]), model_repository=REPO, models=MODELS)


def test_logged_commands_never_carry_the_key(serving):
    args = rank0_args(_with_auth(serving["prod"]), model_repository=REPO, models=MODELS, api_key=KEY)
    shown = redacted(args)
    assert KEY not in " ".join(shown) and shown.count("--strict-readiness=true") == 1
    assert (
        "--grpc-restricted-protocol=inference,metadata,model-config,model-repository,shared-memory,statistics,trace,logging:x-api-key=<redacted>"
        in shown
    )


@pytest.mark.parametrize("key", ["short", "has space in it..", "a:b=c,d-0123456789", ""])
def test_keys_that_would_break_the_flag_are_refused(key):
    with pytest.raises(ServerArgsError, match="16-512 characters"):
        check_api_key(key)
    assert check_api_key(f"  {KEY}\n") == KEY


def test_explicit_model_control_loads_the_repository_models_by_name(serving):
    settings = serving["dev"].model_copy(
        update={"server": serving["dev"].server.model_copy(update={"model_control_mode": "explicit"})}
    )
    args = rank0_args(settings, model_repository=REPO, models=MODELS, listen=Listen(address="127.0.0.1", http_port=9))
    assert [a for a in args if a.startswith("--load-model=")] == [f"--load-model={m}" for m in MODELS]
    assert "--http-address=127.0.0.1" in args and "--http-port=9" in args


def test_tensor_parallel_runs_one_rank_per_gpu_under_mpirun(serving):
    argv = command(serving["prod"], tritonserver="tritonserver", model_repository=REPO, models=MODELS, api_key=KEY)
    assert argv[:3] == ["mpirun", "-n", "1"]
    contexts = " ".join(argv).split(" : ")
    assert len(contexts) == 4
    assert "shm-region-prefix-name=rank0_" in contexts[0] and "--http-port=8000" in contexts[0]
    for rank, context in enumerate(contexts[1:], start=1):
        assert f"shm-region-prefix-name=rank{rank}_" in context
        assert "--allow-http=false --allow-grpc=false --allow-metrics=false" in context
        assert "--model-control-mode=explicit --load-model=tensorrt_llm" in context
        assert KEY not in context


def test_multi_node_places_rank_zero_on_the_leader(serving):
    settings = serving["prod"].model_copy(update={"tensor_parallel": 8, "pipeline_parallel": 2, "nodes": 2})
    argv = command(
        settings, tritonserver="tritonserver", model_repository=REPO, models=MODELS, api_key=KEY, hosts=("leader", "w1")
    )
    assert argv[:5] == ["mpirun", "--host", "leader:8,w1:8", "--map-by", "slot"]
    assert " ".join(argv).count(" : ") == 15
    with pytest.raises(ServerArgsError, match="give that many hosts"):
        command(settings, tritonserver="t", model_repository=REPO, models=MODELS, api_key=KEY, hosts=("leader",))
