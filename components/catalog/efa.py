"""EFA userspace in the GPU image and the NCCL/libfabric environment of pods on EFA pools.

The image installs AWS's EFA installer in its container-build mode (libfabric under ``/opt/amazon/efa``,
the aws-ofi-nccl plugin under ``/opt/amazon/ofi-nccl``) and registers both library directories with
ldconfig, but NCCL only loads the plugin when asked: the installer's container mode ships the named
``libnccl-net-ofi.so``, not the generic ``libnccl-net.so`` NCCL would pick up by itself. So the image
behaves the same on every pool, and pods on EFA pools opt in with ``EFA_ENV`` (the rollout sets it).

Facts and their sources:
- installer 1.49.0, SHA-256 and size: NVIDIA ai-dynamo's AWS EFA image stage (``templates/aws.Dockerfile``
  and its test: ``EFA_VERSION=1.49.0``, size 702811844, libfabric ``2.4.0amzn5.0``, aws-ofi-nccl
  ``libnccl-ofi-ngc-v3 1.20.0-1``) and, independently, ai-dynamo ``check-efa-userspace.sh``;
- ``--build-ngc`` (implies --skip-kmod --skip-limit-conf --no-verify --yes) and ``--skip-mpi`` (the
  Triton image brings its own Open MPI for mpirun): the installer's container-build mode as used there;
- the environment: the plugin's documented opt-in (``NCCL_NET_PLUGIN=ofi``), libfabric's EFA provider
  and GPUDirect RDMA switch, and NVIDIA's EKS multi-node tutorial (``NCCL_SOCKET_IFNAME=^docker,lo``;
  triton-inference-server/tutorials ``EKS_Multinode_Triton_TRTLLM`` containerfile).
"""

from __future__ import annotations

EFA_INSTALLER_VERSION = "1.49.0"
EFA_INSTALLER_SHA256 = "cf2e9281a2328a243c76f911a490faed43ca0fecfe4733c25e34b2e92a32c309"
EFA_INSTALLER_URL = f"https://efa-installer.amazonaws.com/aws-efa-installer-{EFA_INSTALLER_VERSION}.tar.gz"
LIBFABRIC_DIR = "/opt/amazon/efa"
OFI_NCCL_DIR = "/opt/amazon/ofi-nccl"

EFA_ENV: tuple[tuple[str, str], ...] = (
    # Load aws-ofi-nccl (libnccl-net-ofi.so); without it NCCL falls back to TCP sockets across nodes.
    ("NCCL_NET_PLUGIN", "ofi"),
    # libfabric: use the EFA provider, with GPUDirect RDMA (p4d, p5, p5en, p6 support it).
    ("FI_PROVIDER", "efa"),
    ("FI_EFA_USE_DEVICE_RDMA", "1"),
    # Keep NCCL's bootstrap off the loopback and container bridges.
    ("NCCL_SOCKET_IFNAME", "^docker,lo"),
)
"""Environment of serving pods on EFA pools only (name, value), in this order."""
