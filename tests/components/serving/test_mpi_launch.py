"""Multi-node groups: the leader launches every rank, workers prepare and hold their devices, and the
leader's rights stop at its own workers."""

from __future__ import annotations

import kubernetes_validate
import pytest

from inference_platform.components.serving import mpi_launch
from tests.components.serving.test_pod import SELECTOR, make_pod


def test_worker_names_follow_leaderworkerset_naming():
    assert mpi_launch.worker_pod_names("triton", 2, 3) == ["triton-0-1", "triton-0-2", "triton-1-1", "triton-1-2"]
    assert mpi_launch.worker_pod_names("triton", 3, 1) == []


def test_the_leader_may_only_read_and_exec_into_its_workers():
    rules = mpi_launch.launcher_rules(["triton-0-1"])
    assert {(tuple(r["resources"]), tuple(r["verbs"])) for r in rules} == {
        (("pods",), ("get", "list", "watch")),
        (("pods/exec",), ("create", "get")),
    }
    assert all(r["resourceNames"] == ["triton-0-1"] for r in rules)


def test_hosts_put_the_leader_first():
    assert mpi_launch.hosts_arg(3) == "--hosts=$(POD_NAME),$(POD_NAME)-1,$(POD_NAME)-2"


def test_the_launcher_execs_into_the_server_container():
    script = mpi_launch.LAUNCHER_SCRIPT
    assert script.startswith("#!/bin/sh\n") and 'kubectl exec "$host" --container triton --' in script


def leader_and_worker():
    pod = make_pod()
    leader = mpi_launch.leader_spec(pod, service_account="triton", nodes=2, launcher_config_map="launcher",
                                    wait_seconds=900)  # fmt: skip
    worker = mpi_launch.worker_spec(pod, service_account="triton", selector=SELECTOR)
    return leader, worker


def test_leader_serves_waits_for_workers_and_runs_mpirun_through_the_launcher():
    leader, _ = leader_and_worker()
    (server,) = leader["containers"]
    assert server["args"][-1] == "--hosts=$(POD_NAME),$(POD_NAME)-1" and server["ports"]
    env = {e["name"]: e.get("value") for e in server["env"]}
    # Both Open MPI lines: 4.1 reads plm_rsh_*, 5.0 (PRRTE) only plm_ssh_* (tests/catalog/test_open_mpi.py).
    assert env["OMPI_MCA_plm_rsh_agent"] == env["PRTE_MCA_plm_ssh_agent"] == "/opt/inference/mpi/kubexec"
    assert env["OMPI_MCA_plm_rsh_no_tree_spawn"] == env["PRTE_MCA_plm_ssh_no_tree_spawn"] == "1"
    assert leader["automountServiceAccountToken"] is True
    wait = leader["initContainers"][-1]
    assert wait["name"] == "wait-for-workers" and wait["command"][:3] == ["kubectl", "wait", "--for=condition=Ready"]
    assert wait["command"][-1] == "pod/$(POD_NAME)-1" and "--timeout=900s" in wait["command"]
    launcher = next(v for v in leader["volumes"] if v["name"] == "mpi-launcher")
    assert launcher["configMap"] == {"name": "launcher", "defaultMode": 0o555}


def test_workers_prepare_without_listeners_and_follow_their_leaders_zone():
    _, worker = leader_and_worker()
    (server,) = worker["containers"]
    assert "ports" not in server and "startupProbe" not in server and "livenessProbe" not in server
    script = server["command"][2]
    assert server["command"][:2] == ["/bin/sh", "-c"] and "--prepare-only" in script
    assert " python3 -m inference_platform.inference_image.serve --settings " in script  # no CLI code in a pod
    # The worker's PID 1 holds its ranks through the leader's drain, at most the grace period.
    assert script.endswith("exec python3 -m inference_platform.inference_image.drain hold --budget-seconds 60")
    assert server["args"] == ["s3://b/models/e/v1/", "s3://b/models/t/v1/"]
    assert server["readinessProbe"]["exec"]["command"] == ["test", "-s", mpi_launch.WORKER_READY_FILE]
    assert worker["automountServiceAccountToken"] is False
    (affinity,) = worker["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert affinity["matchLabelKeys"] == [mpi_launch.LABEL_GROUP_KEY]
    assert affinity["topologyKey"] == "topology.kubernetes.io/zone"
    assert [c["topologyKey"] for c in worker["topologySpreadConstraints"]] == ["kubernetes.io/hostname"]
    assert "nodeAffinity" in worker["affinity"]


@pytest.mark.parametrize("version", ["1.33", "1.36"])
def test_group_pod_templates_validate_as_pod_templates(version):
    for spec in leader_and_worker():
        doc = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
               "template": {"metadata": {"labels": SELECTOR}, "spec": spec}}  # fmt: skip
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_group_restarts_together_and_rolls_with_the_given_budget():
    leader, worker = leader_and_worker()
    spec = mpi_launch.leader_worker_set_spec(replicas=2, nodes=2, max_surge=1, max_unavailable=0,
                                             leader_labels=SELECTOR, worker_labels=SELECTOR,
                                             leader=leader, worker=worker)  # fmt: skip
    template = spec["leaderWorkerTemplate"]
    assert template["size"] == 2 and template["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert spec["rolloutStrategy"]["rollingUpdateConfiguration"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert template["workerTemplate"]["spec"] is not None and spec["replicas"] == 2


FAKE_PYTHON = """#!/bin/sh
# TEST STAND-IN for the image's python3: record what the worker runs.
echo "$*" >> "$CALLS"
case "$2" in inference_platform.inference_image.serve) echo '{"argv": []}';; esac
"""


def test_the_worker_script_prepares_with_the_groups_hosts_from_leaderworkerset_then_holds(tmp_path):
    """Run for real with sh: the hosts come from LWS_LEADER_ADDRESS and LWS_GROUP_SIZE as LWS v0.10.0 injects
    them, leader first, named as the leader's --hosts names them."""
    import os
    import subprocess

    _, worker = leader_and_worker()
    (server,) = worker["containers"]
    ready = tmp_path / "prepared.json"
    script = server["command"][2].replace(mpi_launch.WORKER_READY_FILE, str(ready))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON)
    (bin_dir / "python3").chmod(0o755)
    calls = tmp_path / "calls"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CALLS": str(calls),
           "LWS_LEADER_ADDRESS": "triton-1.triton.inference", "LWS_GROUP_SIZE": "3"}  # fmt: skip
    subprocess.run(["/bin/sh", "-c", script, "prepare-worker", *server["args"]], env=env, check=True, timeout=30)
    prepare, hold = calls.read_text().splitlines()
    assert prepare.endswith(
        "--engine-uri s3://b/models/e/v1/ --tokenizer-uri s3://b/models/t/v1/ --hosts triton-1,triton-1-1,triton-1-2"
        " --prepare-only"
    )
    assert hold == "-m inference_platform.inference_image.drain hold --budget-seconds 60" and ready.read_text()
