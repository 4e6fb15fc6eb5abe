"""The cold-start model (planners/cold_start.py): phases, their basis, what shortens them."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inference_platform.planners import cold_start as cs

P5 = cs.StartInputs(provisioner="managed", instance_type="p5.48xlarge", accelerators_per_node=8, model_gib=67.7,
                    source="fsx", fsx_mb_s=1200, starts_at_once=4, pods_per_node=2)  # fmt: skip


def test_every_phase_says_where_its_figure_comes_from():
    result = cs.model(P5)
    assert [p.name for p in result.phases] == [
        "node launch",
        "image pull",
        "weights from FSx",
        "engine load",
        "warm-up",
    ]
    assert all(p.basis in ("measured", "modelled") and p.source for p in result.phases)
    assert result.new_node_s == pytest.approx(sum(p.seconds for p in result.phases))
    assert result.existing_node_s == pytest.approx(result.new_node_s - result.phases[0].seconds)


def test_the_issue_21_reading_of_prod_two_pods_copy_at_half_the_gp3_rate():
    """gp3 at 125 MiB/s shared by two pods on one node: ~68 GiB in ~18 minutes each."""
    staged = next(p for p in cs.model(P5).phases if p.name == "weights from FSx")
    assert staged.seconds == pytest.approx(67.7 * 1024 / 62.5)


def test_nvme_raid0_and_parallel_copy_leave_fsx_the_limit():
    fixed = replace(P5, local_nvme=True, copy_streams=cs.PARALLEL_COPY_STREAMS)
    staged = next(p for p in cs.model(fixed).phases if p.name == "weights from FSx")
    fsx_share = 1200e6 / cs.MIB / 4
    assert staged.seconds == pytest.approx(67.7 * 1024 / fsx_share)
    assert cs.model(fixed).new_node_s < cs.model(P5).new_node_s / 2


def test_gp3_throughput_is_capped_by_the_instance_ebs_baseline():
    small = replace(P5, instance_type="g6.xlarge", accelerators_per_node=1, ebs_mib_s=1000)
    rate, why = cs.node_write_mib_s(small)
    assert rate == pytest.approx(125e6 / cs.MIB) and "EBS baseline" in why


def test_lazy_loading_is_shown_as_the_other_choice_and_karpenter_launches_faster():
    result = cs.model(P5)
    assert result.lazy_new_node_s < result.new_node_s
    assert cs.model(replace(P5, provisioner="karpenter")).phases[0].seconds < result.phases[0].seconds


def test_s3_download_uses_the_measured_rate_with_its_conditions():
    s3 = cs.Measured(mib_s=50.0, conditions="here")
    result = cs.model(replace(P5, source="download", s3=s3, local_nvme=True))
    phase = next(p for p in result.phases if p.name == "weights from S3")
    assert phase.basis == "measured" and "here" in phase.source
    assert phase.seconds == pytest.approx(67.7 * 1024 / 50)
    assert cs.S3_MEASURED.mib_s > 0 and "moto" in cs.S3_MEASURED.conditions


def test_headroom_for_a_ramp():
    assert cs.headroom(1800, 1.0) == pytest.approx(0.5)
    assert cs.max_target_share(1800, 1.0) == pytest.approx(1 / 1.5)
    assert cs.gp3_iops_for(1000) == 4000 and cs.gp3_iops_for(200) == 3000
