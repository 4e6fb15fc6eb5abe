"""The cold-start model (planners/cold_start.py): phases at published rates, each option counted where it takes
effect, nothing from the local emulator."""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

from inference_platform.catalog import instance_io
from inference_platform.catalog import transfer_rates as rates
from inference_platform.planners import cold_start as cs

P5 = cs.StartInputs(provisioner="managed", instance_type="p5.48xlarge", accelerators_per_node=8, model_gib=67.7,
                    source="fsx", fsx_mb_s=1200, starts_at_once=4, pods_per_node=2)  # fmt: skip
P5_S3 = replace(P5, source="download", fsx_mb_s=None, local_nvme=True, download_concurrency=16, starts_at_once=3)


def test_a_new_node_adds_launch_and_pull_to_the_running_node_path():
    result = cs.model(P5)
    assert [p.name for p in result.new] == [
        "node launch",
        "image pull",
        "weights from FSx",
        "verify",
        "engine load",
        "warm-up",
    ]
    assert [p.name for p in result.running] == ["weights from FSx", "verify", "engine load", "warm-up"]
    assert result.new_node_s == pytest.approx(result.running_node_s + result.launch_s + result.new[1].seconds)
    assert result.after_launch_s == pytest.approx(result.new_node_s - result.launch_s)
    # Detection comes before either path and counts in the scale-up the headroom is derived from.
    # KEDA's pollingInterval is not in a scale-up's path (replicas running: the HPA's request reads the scalers).
    assert result.detection.seconds == 15 + rates.HPA_SYNC_SECONDS.value
    assert result.scale_up_s == pytest.approx(result.detection.seconds + result.new_node_s)


def test_every_phase_cites_its_source_and_basis_and_none_is_measured_here():
    result = cs.model(P5)
    for p in (result.detection, *result.new):
        assert p.basis in ("published", "second-hand", "assumption", "derived") and p.source
    assert "moto" not in " ".join(p.source for p in result.new if p.name != "weights from S3")
    assert not hasattr(cs, "S3_MEASURED") and "Measured" not in dir(cs)


def test_fsx_is_the_disk_baseline_shared_by_the_pods_that_stage_at_once():
    """gp3 at 125 MiB/s shared by two pods binds first; on the NVMe RAID0 with a parallel copy the file system
    (1,200 MB/s over 4 pods) is the limit."""
    gp3 = next(p for p in cs.model(P5).new if p.name == "weights from FSx")
    assert gp3.seconds == pytest.approx(67.7 * 1024 / 62.5)
    fixed = replace(P5, local_nvme=True, copy_streams=cs.PARALLEL_COPY_STREAMS)
    staged = next(p for p in cs.model(fixed).new if p.name == "weights from FSx")
    assert staged.seconds == pytest.approx(67.7 * 1024 / (1200e6 / cs.MIB / 4))
    # The server hashes what the copy staged (no journal): four threads.
    verify = next(p for p in cs.model(fixed).new if p.name == "verify")
    assert verify.seconds == pytest.approx(67.7 * 1024 / (4 * rates.SHA256_PER_CORE.value))


def test_s3_download_at_s3s_per_connection_rate_bounded_by_the_card_the_disk_and_the_hash():
    result = cs.model(P5_S3)
    assert "verify" not in [p.name for p in result.new]  # the download's journal spares the re-hash
    phase = next(p for p in result.new if p.name == "weights from S3")
    # 16 x 85 MB/s = 1,297 MiB/s < four hashing threads at 1,000 MiB/s each: S3 binds, then the last shard's hash
    # on one thread.
    tail = rates.HF_SHARD_GB.value * 1e9 / cs.MIB / rates.SHA256_PER_CORE.value
    assert phase.seconds == pytest.approx(67.7 * 1024 / (16 * 85e6 / cs.MIB) + tail)
    assert "85 MB/s" in phase.source and "network card 0 100 Gbps" in phase.source
    assert "4 hashing thread(s)" in phase.source
    few = next(p for p in cs.model(replace(P5_S3, download_concurrency=4)).new if p.name == "weights from S3")
    assert few.seconds == pytest.approx(67.7 * 1024 / (4 * 85e6 / cs.MIB) + tail)
    # An init container with one CPU hashes on one thread, which then binds 16 connections.
    one = next(p for p in cs.model(replace(P5_S3, hash_threads=1)).new if p.name == "weights from S3")
    assert one.seconds == pytest.approx(67.7 * 1024 / rates.SHA256_PER_CORE.value + tail)
    assert "1 hashing thread(s)" in one.source


def test_the_pod_sees_network_card_0_not_the_efa_aggregate():
    """p5.48xlarge lists 3,200 Gbps over 32 cards; a pod's download leaves through card 0 (100 Gbps), shared by
    the pods on the node."""
    io = instance_io.instance_io("p5.48xlarge")
    assert io is not None and io.network_cards == 32 and io.default_card_baseline_gbps == 100
    assert cs.disks("p5.48xlarge").network_gbps == 100
    small = replace(P5_S3, instance_type="g6e.xlarge", accelerators_per_node=1, pods_per_node=1, local_nvme=False,
                    ebs_mib_s=1000, download_concurrency=64)  # fmt: skip
    phase = next(p for p in cs.model(small).new if p.name == "weights from S3")
    # g6e.xlarge: 2.5 Gbps card baseline, 125 MB/s EBS baseline: the disk binds.
    assert phase.seconds == pytest.approx(67.7 * 1024 / (125e6 / cs.MIB) + 5e9 / cs.MIB / 1000)


def test_gp3_throughput_is_capped_by_the_instance_ebs_baseline():
    small = replace(P5, instance_type="g6.xlarge", accelerators_per_node=1, ebs_mib_s=1000)
    rate, why = cs.node_write_mib_s(small)
    assert rate == pytest.approx(125e6 / cs.MIB) and "EBS baseline" in why


def test_parallel_pull_is_counted_only_where_nodeadm_honours_it():
    nvme = replace(P5, local_nvme=True)
    full = cs.model(nvme).new[1]
    parallel = cs.model(replace(nvme, image_pull="parallel")).new[1]
    assert parallel.seconds == pytest.approx(full.seconds * (1 - rates.PARALLEL_PULL_SAVING.value))
    assert "FastImagePull" in parallel.source
    # On a gp3 root below the 600 MiB/s nodeadm's documentation asks for, the saving is not counted.
    slow = cs.model(replace(P5, image_pull="parallel", ebs_mib_s=500))
    assert slow.new[1].seconds == pytest.approx(full.seconds) and "600 MiB/s" in " ".join(slow.notes)
    assert cs.model(replace(P5, image_pull="parallel", ebs_mib_s=600)).new[1].seconds < full.seconds
    # g6.xlarge has 4 vCPUs and 16 GiB: honoured. A type below 4 vCPUs or 7 GiB would not be: none in the
    # catalog is, so the rule is pinned on the function.
    assert cs.fast_image_pull_applies("g6.xlarge") and cs.fast_image_pull_applies("p5.48xlarge")
    assert not cs.fast_image_pull_applies("no-such-type")


def test_standby_replicas_turn_a_scale_up_into_a_running_node_start_when_they_cover_a_period():
    result = cs.model(P5_S3)
    assert result.scale_up_path == "new node"
    covered = cs.model(replace(P5_S3, standby_replicas=3))
    assert covered.standby_covers and covered.scale_up_path == "running node"
    assert covered.scale_up_s == pytest.approx(covered.detection.seconds + covered.running_node_s)
    assert not cs.model(replace(P5_S3, standby_replicas=2)).standby_covers


def test_configured_figures_replace_the_models():
    figures = cs.Figures(node_launch_s=100, image_pull_s=50, weights_mib_s=2000, warmup_s=30)
    result = cs.model(replace(P5_S3, figures=figures))
    seconds = {p.name: (p.seconds, p.basis) for p in result.new}
    assert seconds["node launch"] == (100, "configured") and seconds["image pull"] == (50, "configured")
    assert seconds["weights from S3"] == (pytest.approx(67.7 * 1024 / 2000), "configured")
    assert seconds["warm-up"] == (30, "configured")
    assert cs.figure_problems({"a": float("inf"), "b": -1, "c": 0, "d": 2.0, "e": None}) == [
        ("a", "got inf; expected a finite number > 0"),
        ("b", "got -1; expected a finite number > 0"),
        ("c", "got 0; expected a finite number > 0"),
    ]


def test_prods_chosen_options_start_a_replica_within_three_minutes_on_a_running_node():
    """Issue 31: p5, 70B FP8 from S3 at concurrency 16 with parallel pull: <= 3 min from the decision on a running
    node. A new node adds its launch and the pull (the published pull rate halved at best): more than 3 minutes
    after the launch, which only standby capacity avoids (docs/configuration.md "Cold start")."""
    result = cs.model(replace(P5_S3, image_pull="parallel"))
    assert result.running_node_s <= 180
    assert result.after_launch_s > 180
    assert cs.model(replace(P5_S3, image_pull="parallel", standby_replicas=3)).scale_up_path == "running node"


def test_headroom_for_a_ramp():
    assert cs.headroom(1800, 1.0) == pytest.approx(0.5)
    assert cs.max_target_share(1800, 1.0) == pytest.approx(1 / 1.5)
    assert cs.gp3_iops_for(1000) == 4000 and cs.gp3_iops_for(200) == 3000


def test_the_model_reads_no_local_measurement():
    source = inspect.getsource(cs)
    assert "bench" not in source.replace("make bench BENCH_ARGS=cold-start", "")


def test_the_targets_are_judged_and_a_standby_covered_miss_says_so():
    """Issue 31's targets (3 min on a running node, launch + 3 on a new one) are printed met or missed; a miss names
    the phase that keeps the new node above it and the option that keeps a scale-up off that path."""
    slow = cs.model(cs.StartInputs(provisioner="managed", instance_type="p5.48xlarge",
                                                   accelerators_per_node=8, model_gib=67.7, source="download",
                                                   local_nvme=True, download_concurrency=16))  # fmt: skip
    running, new = cs.target_lines(slow)
    assert running.endswith(f"met ({slow.running_node_s / 60:.1f} min)") and "missed" not in running
    assert "missed" in new and "image pull alone takes" in new and "coldStart.standbyReplicas" in new
    covered = cs.model(replace(slow.inputs, standby_replicas=1))
    assert "standby replicas keep the scale-up off this path" in cs.target_lines(covered)[1]
