"""Each stack's cold start from its settings, and the autoscaling ramp check (issue 21)."""

from __future__ import annotations

import pytest

from inference_platform.settings import SettingsError, derived, load_settings
from inference_platform.settings import cold_start as settings_cold_start
from tests.settings.test_inference import load, stack_values

PROD_CACHE = {"enabled": True, "storageCapacityGiB": 2400, "perUnitStorageThroughput": 500}
"""The FSx model cache prod had before it downloaded from S3 (a stack may still choose it)."""


@pytest.mark.parametrize("stack", ["dev", "prod", "npu"])
def test_every_shipped_stack_models_its_cold_start_and_passes_the_ramp_check(stack):
    result = derived.cold_start_model(load({}, stack))
    assert result is not None and result.new_node_s > result.running_node_s > 0
    assert result.scale_up_s >= result.detection.seconds + result.running_node_s


def test_prod_meets_both_targets_with_its_image_cache_and_the_s3_download():
    """Issue 31: prod's modelled scale-up from the decision is <= 3 min on a running node and <= the node's launch + 3
    min on a new one (p5, 70B FP8): the image from its fast-restored cache volume, the weights from S3."""
    result = derived.cold_start_model(load({}, "prod"))
    inputs = result.inputs
    assert inputs.local_nvme and inputs.source == "download" and inputs.download_concurrency == 32
    assert inputs.image_pull == "cached" and inputs.cache_init_mib_s is None
    assert inputs.pods_per_node == 2 and inputs.instance_type == "p5.48xlarge"
    assert inputs.hash_threads == 4  # its init containers have 8 CPUs (the server's 48, capped)
    assert result.running_node_s <= 180 and result.after_launch_s <= 180
    (pull,) = [p for p in result.new if p.name == "image pull"]
    assert pull.seconds == 0 and pull.basis == "published" and "fast snapshot restore" in pull.source
    # With parallel pulls instead, the pull stays on a new node's path: what the cache takes off it.
    parallel = derived.cold_start_model(
        load({"coldStart": {"imagePull": "parallel", "downloadConcurrency": 32}}, "prod")
    )
    assert parallel.after_launch_s > 180 and parallel.running_node_s == result.running_node_s


def test_options_that_would_not_take_effect_are_refused_naming_the_key():
    fsx_inference = {**stack_values("prod")["inference"]}
    fsx_inference["model"] = {**fsx_inference["model"], "source": "fsx"}
    found = _problems({"inference": fsx_inference, "fsx": PROD_CACHE, "coldStart": {"downloadConcurrency": 32}})
    assert [p.path for p in found] == ["coldStart.downloadConcurrency"] and "FSx" in found[0].message
    pools = {**stack_values("prod")["nodePools"]}
    pools["inference"] = {**pools["inference"], "amiFamily": "bottlerocket", "localStorage": "none", "efa": False}
    found = [p for p in _problems({"nodePools": pools}) if p.path.startswith("coldStart")]
    assert [p.path for p in found] == ["coldStart.imagePull"] and "AL2023" in found[0].message


@pytest.mark.parametrize(
    ("figures", "words"),
    [({"warmupSeconds": -1}, "greater than 0"), ({"nodeLaunchSeconds": "inf"}, "finite"),
     ({"imagePullSeconds": 0}, "greater than 0"), ({"weightsMiBps": 20000}, "network card")],
)  # fmt: skip
def test_bad_or_contradicting_cold_start_figures_exit_2_naming_the_key(figures, words):
    found = _problems({"coldStart": {"figures": figures}})
    assert [p.path for p in found] == [f"coldStart.figures.{next(iter(figures))}"], found
    assert words in found[0].message


def test_standby_needs_slots_autoscaling_and_single_node_replicas():
    auto = {**stack_values("prod").get("autoscaling", {}), "maxReplicas": 7}
    found = _problems({"autoscaling": auto, "coldStart": {"standbyReplicas": 2}})
    assert [p.path for p in found] == ["coldStart.standbyReplicas"] and "holds 8" in found[0].message
    off = {**stack_values("prod").get("autoscaling", {}), "enabled": False}
    found = [p for p in _problems({"autoscaling": off, "coldStart": {"standbyReplicas": 1}})
             if p.path.startswith("coldStart")]  # fmt: skip
    assert [p.path for p in found] == ["coldStart.standbyReplicas"] and "autoscaling.enabled" in found[0].message


def _problems(values, stack="prod"):
    region = {"dev": "us-west-2", "prod": "us-east-1", "npu": "us-east-2"}[stack]
    with pytest.raises(SettingsError) as err:
        load_settings({**stack_values(stack), **values}, project="p", stack="s", region=region)
    return err.value.problems


def test_a_target_without_headroom_for_the_ramp_is_refused_naming_the_key():
    auto = {**stack_values("prod").get("autoscaling", {}), "targetRequestsPerReplica": 63, "rampPercentPerHour": 200}
    found = [p for p in _problems({"autoscaling": auto}) if "headroom" in p.message]
    assert [p.path for p in found] == ["autoscaling.targetRequestsPerReplica"]
    assert "cold start" in found[0].message or "scale-up" in found[0].message


def test_fsx_starving_simultaneous_starts_names_its_throughput():
    fsx = {**PROD_CACHE, "perUnitStorageThroughput": 125}
    inference = {**stack_values("prod")["inference"]}
    inference["model"] = {**inference["model"], "source": "fsx"}
    auto = {**stack_values("prod").get("autoscaling", {}), "scaleUp": {"pods": 8}, "rampPercentPerHour": 100,
            "targetRequestsPerReplica": 48}  # fmt: skip
    found = _problems({"fsx": fsx, "autoscaling": auto, "inference": inference, "coldStart": {"imagePull": "full"}})
    keys = [p.path for p in found if "headroom" in p.message]
    assert keys == ["fsx.perUnitStorageThroughput"]


def test_ramp_zero_turns_the_check_off():
    auto = {**stack_values("prod").get("autoscaling", {}), "targetRequestsPerReplica": 64, "rampPercentPerHour": 0}
    settings = load({"autoscaling": auto}, "prod")
    assert settings.autoscaling.ramp_percent_per_hour == 0


def test_the_default_target_is_derived_from_what_a_replica_holds_and_the_scale_up():
    """Unset, the target is floor(hold / (1 + ramp x scale-up)): a faster ramp lowers it, and the plan's derivation
    says each step."""
    settings = load({"autoscaling": {"rampPercentPerHour": 300}}, "prod")
    t = derived.thresholds(settings)
    assert t is not None and not t.hand_set and t.flag is None
    assert t.growth == pytest.approx(3.0 * t.scale_up_s / 3600)
    assert t.derived_target == pytest.approx(t.hold / (1 + t.growth))
    assert derived.target_requests(settings) == int(t.derived_target) < derived.target_requests(load({}, "prod"))
    assert [s.what for s in t.steps][-4:] == ["one scale-up", "headroom", "derived target", "rendered target"]
    assert derived.cold_start_summary(settings)["thresholds"]["targetRequests"] == int(t.derived_target)


def test_a_hand_set_target_stays_possible_validated_and_flagged():
    auto = {**stack_values("prod").get("autoscaling", {}), "targetRequestsPerReplica": 40}
    t = derived.thresholds(load({"autoscaling": auto}, "prod"))
    assert t.hand_set and t.target == 40 and "below the derived" in t.flag
    assert derived.cold_start_summary(load({"autoscaling": auto}, "prod"))["thresholds"]["flag"] == t.flag


def test_an_slo_tighter_than_the_prefill_of_max_input_len_exits_2_naming_it():
    serving = {**stack_values("prod")["serving"]}
    serving["slo"] = {**serving["slo"], "ttftP50Ms": 5, "ttftP95Ms": 10}
    found = [p for p in _problems({"serving": serving}) if "maxInputLen" in p.message]
    assert [p.path for p in found] == ["serving.slo.ttftP95Ms"] and "8192 tokens" in found[0].message


def _headroom_keys(values, stack="prod"):
    return [p.path for p in _problems(values, stack) if "headroom" in p.message or "day ceiling" in p.message]


def test_the_target_is_judged_against_what_a_replica_holds_within_the_slo():
    """At ITL 20 ms a prod replica holds 43 requests within the SLO, not maxBatchSize 64: target 48 (75 %
    of the batch, allowed by the batch alone) leaves no headroom, and the derived target drops below it."""
    capacity = {**stack_values("prod")["capacity"], "slo": {"ttftMs": 400, "itlMs": 20}}
    auto = {**stack_values("prod").get("autoscaling", {}), "targetRequestsPerReplica": 48}
    found = [p for p in _problems({"capacity": capacity, "autoscaling": auto}) if "headroom" in p.message]
    assert [p.path for p in found] == ["autoscaling.targetRequestsPerReplica"]
    assert "holds 43 requests within the SLO (set by capacity.slo)" in found[0].message
    settings = load({"capacity": capacity}, "prod")
    hold = settings_cold_start.replica_hold(derived._sections(settings), "us-east-1")
    assert (hold.requests, hold.limit) == (43, "capacity.slo")
    # ~19 % headroom: 100 %/h over prod's ~11.4-min scale-up on a new node, detection included.
    assert derived.target_requests(settings) < 43 / (1 + 0.15) < 48


def test_a_derived_target_that_would_need_less_than_one_request_refuses_the_ramp():
    """npu holds 8 requests; at 5000 %/h the load grows more than 8x during a cold start: even a target of 1
    is too late, refused naming the ramp (never silently rendered as 1)."""
    found = [p for p in _problems({"autoscaling": {"rampPercentPerHour": 5000}}, "npu") if "headroom" in p.message]
    assert [p.path for p in found] == ["autoscaling.rampPercentPerHour"]
    assert "even the lowest autoscaling target (1 request per replica)" in found[0].message
    assert "lower autoscaling.rampPercentPerHour to at most" in found[0].message


def test_the_ceiling_must_carry_the_planned_peak_plus_the_cold_start_growth():
    # Explicit: prod's peak (1.6 replicas' worth) grows ~41 % during one scale-up at 200 %/h: 2 cannot carry it.
    auto = {
        **stack_values("prod").get("autoscaling", {}),
        "minReplicas": 2,
        "maxReplicas": 2,
        "rampPercentPerHour": 200,
    }
    inference = {k: v for k, v in stack_values("prod")["inference"].items() if k != "replicas"}
    assert "autoscaling.maxReplicas" in _headroom_keys({"autoscaling": auto, "inference": inference})
    # Derived: 2.4 replicas' worth at the peak plans a ceiling of 3 (at the plan's 80 % target), but with the
    # growth during one scale-up at 200 %/h (~41 %) it needs 4: named, with what to set.
    from inference_platform.settings.derived import derived_bounds

    settings = load({}, "prod")
    p = derived_bounds(settings).plan
    per_day = 2.4 / (p.peak.output_tps / p.option.tokens_per_s_per_replica) * settings.capacity.tokens_per_day
    capacity = {**stack_values("prod")["capacity"], "tokensPerDay": per_day}
    ramp = {**stack_values("prod").get("autoscaling", {}), "rampPercentPerHour": 200}
    found = [p for p in _problems({"capacity": capacity, "autoscaling": ramp}) if "day ceiling" in p.message]
    assert [p.path for p in found] == ["autoscaling.maxReplicas"] and "at least 4" in found[0].message


def test_one_scale_up_starts_no_more_than_the_derived_ceiling():
    """prod sets no maxReplicas: scaleUp.pods 4 starts at most the 3 replicas its day ceiling allows."""
    settings = load({}, "prod")
    assert settings.autoscaling.max_replicas is None and settings.autoscaling.scale_up.pods == 4
    assert derived.cold_start_model(settings).inputs.starts_at_once == 3
    inputs = settings_cold_start.inputs_for(derived._sections(settings), 2)
    assert inputs.starts_at_once == 2


def test_queue_ratio_and_the_kv_trigger_are_judged():
    prod_auto = stack_values("prod").get("autoscaling", {})
    # queueRatio on TensorRT-LLM: the measured ratio does not follow the LLM API's queue, refused whatever the ramp.
    for extra in ({}, {"kvCacheTarget": 0.05}, {"rampPercentPerHour": 0}):
        found = [p for p in _problems({"autoscaling": {**prod_auto, "signal": "queueRatio", **extra}})
                 if "queue/compute ratio does not follow" in p.message]  # fmt: skip
        assert [p.path for p in found] == ["autoscaling.signal"] and "BENCH_ARGS=signals" in found[0].message
    # On Neuron (unmeasured) it is judged by the ramp: it fires only with replicas full, so it leaves no headroom.
    npu_auto = stack_values("npu").get("autoscaling", {})
    found = [
        p for p in _problems({"autoscaling": {**npu_auto, "signal": "queueRatio"}}, "npu") if "headroom" in p.message
    ]
    assert [p.path for p in found] == ["autoscaling.signal"] and "cannot be judged" in found[0].message
    # The HPA follows the earlier trigger: a target beyond the batch is rescued by an early KV trigger, and
    # when both fire too late both are named.
    load({"autoscaling": {**prod_auto, "targetRequestsPerReplica": 600, "kvCacheTarget": 0.05}}, "prod")
    keys = _headroom_keys({"autoscaling": {**prod_auto, "targetRequestsPerReplica": 600, "kvCacheTarget": 0.1}})
    assert sorted(keys) == ["autoscaling.kvCacheTarget", "autoscaling.targetRequestsPerReplica"]


@pytest.mark.parametrize(
    ("fallback", "key", "words"),
    [({"replicas": 9}, "autoscaling.fallback.replicas", "above maxReplicas"),
     ({"replicas": 1}, "autoscaling.fallback.replicas", "below minReplicas"),
     ({"failureThreshold": -1}, "autoscaling.fallback.failureThreshold", "greater than or equal to 0"),
     ({"failureThreshold": 21}, "autoscaling.fallback.failureThreshold", "less than or equal to 20")],
)  # fmt: skip
def test_fallback_settings_are_validated_naming_the_key(fallback, key, words):
    auto = {**stack_values("prod").get("autoscaling", {}), "minReplicas": 2, "maxReplicas": 4, "fallback": fallback}
    found = [p for p in _problems({"autoscaling": auto}) if p.path.startswith("autoscaling.fallback")]
    assert [p.path for p in found] == [key] and words in found[0].message


def test_the_plan_says_how_scaling_degrades_on_a_failing_signal():
    from inference_platform.inferctl.cost.summary import cold_start_line

    summary = derived.cold_start_summary(load({}, "prod"))
    assert summary["fallback"] == {"failureThreshold": 3, "pollingSeconds": 15, "replicas": 3}
    text = cold_start_line(summary)
    assert "no backfill when the queue fails" in text and "night ceiling holds" in text


def test_a_night_ceiling_below_the_nights_planned_load_contradicts_capacity_night_fraction():
    """prod's day ceiling is 3: a night fraction of 0.1 leaves ceil(3 x 0.1) = 1 replica at night, which cannot carry
    a night at 0.9 of the day's load (two replicas' worth): refused naming the key. At 0.5 it loads."""
    auto = {**stack_values("prod").get("autoscaling", {}), "night": {"fraction": 0.1}}
    capacity = {**stack_values("prod")["capacity"], "nightFraction": 0.9}
    found = [
        p for p in _problems({"autoscaling": auto, "capacity": capacity}) if p.path == "autoscaling.night.fraction"
    ]
    assert len(found) == 1 and "below the night's planned" in found[0].message
    load({"autoscaling": {**stack_values("prod").get("autoscaling", {}), "night": {"fraction": 0.5}}}, "prod")


def test_the_planned_day_on_the_scaled_objects_bounds_shows_the_night_at_half_the_load():
    """The seed's night: half the day's load (capacity.nightFraction 0.5) on the night bounds (autoscaling.night:
    ceil(day x 0.5), production keeps 2): prod runs 2 of its 3 replicas at night."""
    plan = derived.capacity_summary(load({}, "prod"))["dayProfile"]
    assert plan["nightLoadShare"] == 0.5 and plan["night"] == {"hours": 8, "replicas": 2, "utilisation": 0.397}
    assert [h["level"] for h in plan["hours"]].count("night") == 8 and len(plan["hours"]) == 24
    assert {h["hour"] for h in plan["hours"] if h["level"] == "night"} == {22, 23, 0, 1, 2, 3, 4, 5}
    assert 0 < plan["utilisation24h"] < 1


BAD = [
    ("prod", "autoscaling", "rampPercentPerHour", ".nan", "autoscaling.rampPercentPerHour", "finite"),
    ("prod", "autoscaling", "rampPercentPerHour", "-5", "autoscaling.rampPercentPerHour", "greater than or equal to 0"),
    ("prod", "serving", "slo.ttftP95Ms", ".inf", "serving.slo.ttftP95Ms", "finite"),
    ("prod", "serving", "slo.ttftP95Ms", "410", "serving.slo.ttftP95Ms", "prefill of serving.maxInputLen"),
    ("prod", "coldStart", "figures.warmupSeconds", ".nan", "coldStart.figures.warmupSeconds", "finite"),
    ("prod", "coldStart", "figures.nodeLaunchSeconds", "-1", "coldStart.figures.nodeLaunchSeconds", "greater than 0"),
    ("prod", "coldStart", "figures.weightsMiBps", "99999", "coldStart.figures.weightsMiBps", "network card"),
    ("prod", "coldStart", "downloadConcurrency", "0", "coldStart.downloadConcurrency", "greater than or equal to 1"),
    ("prod", "autoscaling", "fallback.replicas", ".inf", "autoscaling.fallback.replicas", "finite"),
    ("prod", "serving", "slo.minOutputTokensPerSecond", "200", "serving.slo.minOutputTokensPerSecond",
     "one request alone decodes at most about 98 tokens/s on p5.48xlarge at TP 4"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("stack", "section", "dotted", "value", "path", "words"), BAD, ids=[f"{b[4]}={b[3]}" for b in BAD]
)
def test_bad_ramps_slos_and_cold_start_figures_make_the_plan_exit_2_naming_the_key(tmp_path, capsys, stack, section,
                                                                                  dotted, value, path, words):  # fmt: skip
    """Issue 31 item 5 through the real command: non-finite, negative or contradicting values exit 2 with one line
    naming the key, no traceback."""
    from inference_platform.inferctl.cli import main
    from tests.settings.test_plan_exit import stack_text

    file = tmp_path / f"Pulumi.{stack}.yaml"
    file.write_text(stack_text(stack, section, dotted, value))
    code = main(["plan", "--stack", stack, "--stack-file", str(file), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip().startswith("- ")]
    assert len(lines) == 1 and lines[0].strip().startswith(f"- {path}:") and words in lines[0], err


@pytest.mark.parametrize(
    ("values", "key"),
    [({"serving": {"slo": {"itlP50Ms": 5}}}, "serving.slo.itlP50Ms"),
     ({"capacity": {"slo": {"ttftMs": 400, "itlMs": 5}}}, "capacity.slo.itlMs")],
)  # fmt: skip
def test_an_itl_slo_one_request_alone_misses_is_refused_naming_the_itl_key(values, key):
    """Issue 31 item 5: prod's p5.48xlarge TP 4 decodes one request at about 10 ms per token (planners/latency.py),
    so an ITL SLO of 5 ms holds no request. The headroom check names the ITL key that binds, not the TTFT one."""
    merged = {section: {**stack_values("prod")[section], **over} for section, over in values.items()}
    if "serving" in values:
        merged["serving"]["slo"] = {**stack_values("prod")["serving"]["slo"], **values["serving"]["slo"]}
    found = [p for p in _problems(merged) if "no autoscaling target can leave headroom" in p.message]
    assert [p.path for p in found] == [key]
    assert found[0].message.startswith("got 5; one request alone exceeds this ITL on p5.48xlarge at TP 4")
    # Within reach (prod's own 40 ms) it loads.
    load({}, "prod")


def test_an_output_rate_one_request_alone_cannot_reach_is_refused_only_where_autoscaled():
    """prod decodes one request alone at about 98 tokens/s (p5.48xlarge TP 4, planners/latency.py): 200 contradicts
    the layout on an autoscaled stack (no target can hold it); without autoscaling it is the verdict's failure."""
    slo = {**stack_values("prod")["serving"]["slo"], "minOutputTokensPerSecond": 200}
    serving = {**stack_values("prod")["serving"], "slo": slo}
    found = [p for p in _problems({"serving": serving}) if p.path == "serving.slo.minOutputTokensPerSecond"]
    assert len(found) == 1 and "about 98 tokens/s" in found[0].message
    off = {**stack_values("prod")["autoscaling"], "enabled": False}
    load({"serving": serving, "autoscaling": off, "batch": {**stack_values("prod")["batch"], "enabled": False}}, "prod")
    load({"serving": {**serving, "slo": {**slo, "minOutputTokensPerSecond": 90}}}, "prod")
