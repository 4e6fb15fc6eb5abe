"""FSx for Lustre facts the settings and the model cache share (pure: no Pulumi).

Source: Amazon FSx for Lustre User Guide, "Deployment and storage class options" and
"CreateFileSystemLustreConfiguration" (PerUnitStorageThroughput, StorageCapacity).
"""

from __future__ import annotations

# MB/s of throughput per TiB of storage each SSD deployment type offers.
THROUGHPUT_MB_S_PER_TIB: dict[str, tuple[int, ...]] = {
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}
# Lustre's TCP ports: 988 for the LNet service, 1018-1023 for the client-server connections.
LNET_PORT = 988
CLIENT_PORT_RANGE = (1018, 1023)
# PERSISTENT_2 SSD capacity: 1,200 GiB or a multiple of 2,400 GiB.
PERSISTENT_2_SMALLEST_GIB = 1200
PERSISTENT_2_STEP_GIB = 2400


def throughput_problem(deployment_type: str, per_unit_throughput: int) -> str | None:
    """Why ``per_unit_throughput`` is not on offer for ``deployment_type``, or None when it is."""
    offered = THROUGHPUT_MB_S_PER_TIB.get(deployment_type)
    if offered is None:
        return f"unknown deployment type {deployment_type!r}; known: {', '.join(THROUGHPUT_MB_S_PER_TIB)}"
    if per_unit_throughput not in offered:
        return f"got {per_unit_throughput}; {deployment_type} offers {', '.join(map(str, offered))} MB/s per TiB"
    return None


def capacity_problem(storage_capacity_gib: int) -> str | None:
    """Why a PERSISTENT_2 SSD file system cannot have this capacity, or None when it can."""
    if storage_capacity_gib == PERSISTENT_2_SMALLEST_GIB or (
        storage_capacity_gib > 0 and storage_capacity_gib % PERSISTENT_2_STEP_GIB == 0
    ):
        return None
    return (
        f"got {storage_capacity_gib}; PERSISTENT_2 takes {PERSISTENT_2_SMALLEST_GIB} GiB or a multiple of "
        f"{PERSISTENT_2_STEP_GIB} GiB"
    )
