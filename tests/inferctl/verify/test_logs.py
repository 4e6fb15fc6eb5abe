"""The logs check: a local log file read from an offset, and the cluster path through the Kubernetes
API, exercised with a FAKE API object (no API server runs on this machine): it returns the same
objects the kubernetes client does (V1Pod, V1ContainerStatus ...), built with the client's own models."""

from __future__ import annotations

from kubernetes.client import (
    V1ContainerState,
    V1ContainerStateTerminated,
    V1ContainerStateWaiting,
    V1ContainerStatus,
    V1ObjectMeta,
    V1Pod,
    V1PodList,
    V1PodStatus,
)

from inference_platform.inferctl.verify.logs import check_log_file, check_pods, problem_lines

TRITON_LOG = """I1203 07:09:43.3 server.cc:1] "Started"
W1203 07:09:43.3 metrics.cc:1] "Unable to get power limit for GPU 0"
E1203 07:09:44.1 model_lifecycle.cc:1] "failed to load 'tensorrt_llm'"
I1203 07:09:45.0 http_server.cc:1] "Started HTTPService"
"""


def test_triton_error_lines_and_oom_words_are_problems():
    assert problem_lines(TRITON_LOG.splitlines()) == [TRITON_LOG.splitlines()[2]]
    assert problem_lines(["torch.cuda.OutOfMemoryError: CUDA out of memory", "INFO ok", "ERROR: stub died"]) == [
        "torch.cuda.OutOfMemoryError: CUDA out of memory",
        "ERROR: stub died",
    ]


def test_log_file_is_read_from_the_offset(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(TRITON_LOG)
    assert not check_log_file(log).clean
    after_start = check_log_file(log, offset=len(TRITON_LOG))
    assert after_start.clean
    with log.open("a") as out:
        out.write("Killed process 4242 (tritonserver): OOM\n")
    late = check_log_file(log, offset=len(TRITON_LOG))
    assert late.problems == ["server.log: Killed process 4242 (tritonserver): OOM"]


def test_an_unreadable_log_is_not_a_pass(tmp_path):
    report = check_log_file(tmp_path / "missing.log")
    assert not report.checked and not report.clean


class FakeCoreV1:
    """FAKE CoreV1Api: the two calls check_pods makes, answering from given pods and logs."""

    def __init__(self, pods: list[V1Pod], logs: dict[tuple[str, str], str]) -> None:
        self.pods = pods
        self.logs = logs
        self.calls: list[tuple] = []

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> V1PodList:
        self.calls.append(("list", namespace, label_selector))
        return V1PodList(items=self.pods)

    def read_namespaced_pod_log(self, name: str, namespace: str, container: str, since_seconds=None) -> str:
        self.calls.append(("log", name, container, since_seconds))
        return self.logs.get((name, container), "")


def pod(name: str, *statuses: V1ContainerStatus) -> V1Pod:
    return V1Pod(metadata=V1ObjectMeta(name=name), status=V1PodStatus(container_statuses=list(statuses)))


def status(restarts: int = 0, last=None, state=None) -> V1ContainerStatus:
    return V1ContainerStatus(
        name="triton",
        image="i",
        image_id="x",
        ready=restarts == 0,
        restart_count=restarts,
        last_state=last,
        state=state,
    )


def test_healthy_pods_pass():
    api = FakeCoreV1([pod("inference-0", status()), pod("inference-1", status())], {})
    report = check_pods(api, "inference", "app=inference", since_seconds=600)
    assert report.clean and report.notes == ["2 pod(s) checked"]
    assert ("list", "inference", "app=inference") in api.calls and ("log", "inference-1", "triton", 600) in api.calls


def test_restarts_oomkilled_crashloop_and_error_lines_are_problems():
    oom = V1ContainerState(terminated=V1ContainerStateTerminated(exit_code=137, reason="OOMKilled"))
    crash = V1ContainerState(waiting=V1ContainerStateWaiting(reason="CrashLoopBackOff"))
    api = FakeCoreV1(
        [pod("inference-0", status(restarts=2, last=oom, state=crash)), pod("inference-1", status())],
        {("inference-1", "triton"): TRITON_LOG},
    )
    report = check_pods(api, "inference", "app=inference")
    assert report.problems[:3] == [
        "inference-0/triton: 2 restart(s)",
        "inference-0/triton: last terminated OOMKilled (exit 137)",
        "inference-0/triton: waiting CrashLoopBackOff",
    ]
    assert report.problems[3].startswith("inference-1/triton: E1203")


def test_no_matching_pods_is_not_a_pass():
    report = check_pods(FakeCoreV1([], {}), "inference", "app=nothing")
    assert not report.checked and report.notes == ["no pods match the selector"]
