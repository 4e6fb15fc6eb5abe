"""The GPU image installs kubectl and the EFA userspace, each pinned by version and checksum."""

from __future__ import annotations

import re
from pathlib import Path

from inference_platform.catalog import efa
from inference_platform.catalog.eks_versions import DEFAULT_KUBERNETES_VERSION

DOCKERFILE = Path(__file__).resolve().parents[2] / "inference_image" / "Dockerfile"


def _text() -> str:
    return DOCKERFILE.read_text()


def _args() -> dict[str, str]:
    return dict(re.findall(r"^ARG ([A-Z0-9_]+)=(\S*)$", _text(), re.MULTILINE))


def _runs() -> list[str]:
    """Each RUN instruction with its continuation lines joined."""
    joined = re.sub(r"\\\n", " ", _text())
    return [line for line in joined.splitlines() if line.startswith("RUN ")]


def test_kubectl_is_pinned_and_verified_before_use():
    args = _args()
    assert re.fullmatch(r"\d+\.\d+\.\d+", args["KUBECTL_VERSION"])
    # kubectl supports one minor version of skew against the API server.
    major_minor = tuple(int(x) for x in args["KUBECTL_VERSION"].split(".")[:2])
    cluster = tuple(int(x) for x in DEFAULT_KUBERNETES_VERSION.split("."))
    assert major_minor[0] == cluster[0] and abs(major_minor[1] - cluster[1]) <= 1
    for arch in ("AMD64", "ARM64"):
        assert re.fullmatch(r"[0-9a-f]{128}", args[f"KUBECTL_SHA512_{arch}"]), arch
    (run,) = [r for r in _runs() if "kubernetes-client-linux" in r]
    download = run.index("curl ")
    check = run.index("sha512sum --check --strict")
    extract = run.index("tar -xzf")
    assert download < check < extract  # nothing unpacked before the checksum matched
    assert "dl.k8s.io/v${KUBECTL_VERSION}/" in run and "set -eu" in run
    assert "kubectl version --client" in run


def test_efa_installer_is_pinned_verified_and_matches_the_catalog():
    args = _args()
    assert args["EFA_INSTALLER_VERSION"] == efa.EFA_INSTALLER_VERSION
    assert args["EFA_INSTALLER_SHA256"] == efa.EFA_INSTALLER_SHA256
    assert re.fullmatch(r"[0-9a-f]{64}", efa.EFA_INSTALLER_SHA256)
    (run,) = [r for r in _runs() if "efa_installer.sh" in r]
    assert run.index("sha256sum --check --strict") < run.index("tar -xzf") < run.index("efa_installer.sh")
    assert "https://efa-installer.amazonaws.com/" in run and "latest" not in run
    # Container mode: no kernel module or host limits from inside an image; the base's MPI stays.
    assert "--build-ngc" in run and "--skip-mpi" in run
    # libfabric and aws-ofi-nccl land where EFA_ENV expects them and are registered with ldconfig.
    assert f"{efa.LIBFABRIC_DIR}/bin/fi_info" in run
    assert f"{efa.OFI_NCCL_DIR}/lib/libnccl-net-ofi.so" in run
    assert "ldconfig" in run


def test_installs_run_as_root_and_the_server_does_not():
    text = _text()
    users = re.findall(r"^USER (\S+)$", text, re.MULTILINE)
    assert users == ["triton-server"]
    assert text.index("efa_installer.sh") < text.index("USER triton-server")
    assert text.index("kubernetes-client-linux") < text.index("USER triton-server")


def test_pip_installs_only_from_locks_and_keeps_the_base_images_packages():
    """locks/image-gpu.txt was compiled under base_image_constraints.txt (tests/test_locks.py checks it); the bootstrap
    tools only build the package, from a scratch folder, so the base's own pip and setuptools stay."""
    (run,) = [r for r in _runs() if "locks/image-gpu.txt" in r]
    assert "pip install --require-hashes --no-deps -r /src/locks/image-gpu.txt" in run
    assert (
        "--target /tmp/bootstrap -r /src/locks/bootstrap.txt" in run
        and "--mount=type=tmpfs,target=/tmp/bootstrap" in run
    )
    assert "PYTHONPATH=/tmp/bootstrap python3 -m pip install --no-deps --no-build-isolation /src" in run
    assert "requirements-image.txt" not in run


def test_the_efa_environment_turns_the_plugin_on():
    env = dict(efa.EFA_ENV)
    assert env["NCCL_NET_PLUGIN"] == "ofi" and env["FI_PROVIDER"] == "efa"
    assert len(env) == len(efa.EFA_ENV)
