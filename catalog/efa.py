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
when none are available). Whether the AMI reserves any is not something this project can show: the EKS AL2023 AMI installs EFA with
``efa_installer.sh --minimal -y`` (awslabs/amazon-eks-ami v20260724 templates/al2023/provisioners/install-efa.sh),
and the reservation is the installer's efa-config package's (awslabs/libfabric-ci-scripts #122: "Due to changes with
EFA-Config, we only reserve as many huge pages as necessary"; its formula, 110 MB per endpoint, two endpoints a core,
quoted in bottlerocket-os/bottlerocket-core-kit #141), whose place in ``--minimal`` the installer's published
sources do not show. So the EFA nodes reserve them themselves (``efa_hugepages_script``): a pod may only use what it
requests (the hugetlb cgroup), and a request no node can satisfy leaves the pod Pending.

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


HUGEPAGE_2MI_KIB = 2048
HUGEPAGES_2MI_SYSFS = f"/sys/kernel/mm/hugepages/hugepages-{HUGEPAGE_2MI_KIB}kB/nr_hugepages"
"""The kernel's count of reserved 2 MiB pages (Documentation/admin-guide/mm/hugetlbpage.rst: "/sys/kernel/mm/
hugepages/hugepages-${size}kB/nr_hugepages"), size-specific so a node whose default huge page size differs still
reserves the pages the pods ask for."""
HUGEPAGES_SYSCTL_FILE = "/etc/sysctl.d/90-inference-efa-hugepages.conf"


def node_hugepages_2mi(accelerators_per_node: int, efa_interfaces: int) -> int:
    """2 MiB pages an EFA node reserves: one EFA pod's request for each EFA pod the node can hold at most (each
    takes at least one accelerator and one EFA interface: planners/placement.py ``efa_per_pod``). On a p5.48xlarge
    min(8, 32) x 5 GiB = 40 GiB of its 2 TiB; on a trn1.32xlarge min(16, 8) x 5 GiB = 40 GiB of its 512 GiB."""
    pods = max(0, min(accelerators_per_node, efa_interfaces))
    return pods * EFA_HUGEPAGES_2MI_MIB * 1024 // HUGEPAGE_2MI_KIB


def efa_hugepages_script(pages: int) -> str:
    """A user-data shell script (cloud-init runs it in cloud-final, before nodeadm-run starts the kubelet:
    awslabs/amazon-eks-ami v20260724 templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service "start
    after cloud-init, in order to pickup changes the user may have applied via cloud-init scripts") that raises the
    node's 2 MiB huge pages to at least ``pages`` (never lowering what the AMI reserved), keeps the count across
    reboots in sysctl.d, and fails the boot loudly when the kernel cannot find the memory."""
    return f"""#!/bin/bash
# Huge pages for EFA pods (catalog/efa.py): libfabric's EFA provider backs its bounce buffers with them.
set -euo pipefail
want={pages}
have=$(cat {HUGEPAGES_2MI_SYSFS})
if [ "$have" -lt "$want" ]; then
  echo "$want" > {HUGEPAGES_2MI_SYSFS}
fi
got=$(cat {HUGEPAGES_2MI_SYSFS})
if [ "$got" -lt "$want" ]; then
  echo "efa hugepages: reserved $got of $want 2 MiB pages" >&2
  exit 1
fi
echo "vm.nr_hugepages = $got" > {HUGEPAGES_SYSCTL_FILE}
"""
