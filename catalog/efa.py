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

HUGEPAGES_2MI = "hugepages-2Mi"
EFA_HUGEPAGES_2MI_MIB = 5120
"""Huge pages an EFA pod requests (requests = limits), as AWS's EKS EFA guidance does for its p5 NCCL test worker
(awsdocs/amazon-eks-user-guide latest/ug/ml/node-efa.adoc; aws-samples/awsome-distributed-training
micro-benchmarks/nccl-tests/kubernetes/nccl-tests.yaml). libfabric's EFA provider (v2.4.0, what installer 1.49.0
ships) allocates its registered bounce-buffer pools from huge pages unless FI_EFA_USE_HUGE_PAGE is off
(prov/efa/src/rdm/efa_rdm_ep_fiops.c OFI_BUFPOOL_HUGEPAGES; prov/util/src/util_buf.c falls back to 4 KiB pages
when none are available). EKS accelerated AMIs with EFA report them allocatable (the guide's node shows
``hugepages-2Mi`` capacity); a pod may only use what it requests (the hugetlb cgroup).

No capability comes with EFA: ``IPC_LOCK`` in ``capabilities.add`` is inert for a non-root container (Kubernetes
sets no ambient capabilities, so the exec as UID 1000 clears the permitted and effective sets: capabilities(7);
measured CapEff 0 in NVIDIA/nvidia-container-toolkit#2037 and with setpriv in tests/policies), and Pod Security
``restricted`` refuses it. What EFA memory registration needs is a locked-memory limit, a property of the node's
container runtime (nodeadm ``containerd.baseRuntimeSpec.process.rlimits``, awslabs/amazon-eks-ami v20260724
nodeadm/doc/examples.md "Modifying container RLIMITs")."""

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
