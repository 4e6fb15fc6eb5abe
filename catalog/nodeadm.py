"""What nodeadm, the AL2023 EKS AMI's node bootstrap, does with a NodeConfig's container settings, read from
awslabs/amazon-eks-ami at v20260724 (the AMI release the EFA facts of catalog/efa.py were read at; EKS picks the
newest AMI for the cluster's Kubernetes version, so a later release must be re-read: ``make deps-check``).

- The AMI's base OCI runtime spec, embedded in nodeadm (``nodeadm/internal/containerd/base-runtime-spec.json``):
  ``process.rlimits`` is a one-item list, ``RLIMIT_NOFILE`` soft 65536, hard 1048576. Every container starts
  from it.
- ``containerd.baseRuntimeSpec`` of a NodeConfig is merged over it (``nodeadm/internal/containerd/
  base_runtime_spec.go`` ``writeBaseRuntimeSpec`` -> ``util.Merge``), and ``nodeadm/internal/util/merge.go`` calls
  ``mergo.Merge`` with ``mergo.WithOverride`` only, not ``WithAppendSlice`` (``nodeadm/vendor/dario.cat/mergo/
  merge.go``: "WithAppendSlice will make merge append slices instead of overwriting it"): maps merge key by key,
  but a list in the NodeConfig replaces the AMI's list whole. So a NodeConfig that sets one rlimit drops the
  AMI's open-files limit of 65536: containers then get whatever limit the runtime itself runs with, and a busy
  server (thousands of streams, sockets to every peer) may run out of file descriptors.

Pinned in tests/components/compute/test_node_rlimits.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

AMI_RELEASE: Final = "v20260724"
AMI_CONTAINER_RLIMITS: Final[tuple[Mapping[str, Any], ...]] = (
    {"type": "RLIMIT_NOFILE", "hard": 1048576, "soft": 65536},
)
"""``process.rlimits`` of nodeadm/internal/containerd/base-runtime-spec.json at v20260724."""


def merged_rlimits(node_config_rlimits: Sequence[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    """The rlimits every container gets once nodeadm has merged a NodeConfig's list over the AMI's: the
    NodeConfig's list when it gives one (lists are replaced, not merged), else the AMI's."""
    if node_config_rlimits is None:
        return list(AMI_CONTAINER_RLIMITS)
    return list(node_config_rlimits)
