"""Every stack's model repository renders, parses back as Triton ModelConfig, and wires up."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from google.protobuf import text_format
from inference_platform.inference_image.model_repository import nvidia_keys
from inference_platform.inference_image.render import RenderError
from inference_platform.inference_image.repository import (
    model_parameters,
    plan_repository,
    render_configs,
    render_repository,
)
from inference_platform.inference_image.testing.cpu_llm.options import StandIn
from inference_platform.infra.settings.serving import ServingSettings
from tritonclient.grpc import model_config_pb2

STACKS = ("dev", "prod", "npu")
ENGINE = Path("/models/engine")
TOKENIZER = Path("/models/tokenizer")
CONFIG = model_config_pb2.ModelConfig


def _parse(path: Path) -> model_config_pb2.ModelConfig:
    return text_format.Parse(path.read_text(), CONFIG())


def _render(serving: ServingSettings, tmp_path: Path, stand_in: StandIn | None = None) -> dict[str, CONFIG]:
    destination = tmp_path / "repo"
    names = render_repository(serving, destination, engine_dir=ENGINE, tokenizer_dir=TOKENIZER, stand_in=stand_in)
    return {name: _parse(destination / name / "config.pbtxt") for name in names}


def _params(config: CONFIG) -> dict[str, str]:
    return {key: value.string_value for key, value in config.parameters.items()}


def _io(config: CONFIG) -> tuple[list[tuple], list[tuple]]:
    inputs = [(i.name, i.data_type, tuple(i.dims), i.optional, tuple(i.reshape.shape)) for i in config.input]
    outputs = [(o.name, o.data_type, tuple(o.dims)) for o in config.output]
    return inputs, outputs


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("stand_in", [None, StandIn()], ids=["production", "stand-in"])
def test_every_stack_renders_and_every_config_parses(serving, tmp_path, stack, stand_in):
    settings = serving[stack]
    configs = _render(settings, tmp_path, stand_in)
    llm = settings.llm_model_name
    assert list(configs) == ["preprocessing", llm, "postprocessing", "stream_gate", "ensemble", "tensorrt_llm_bls"]
    for name, config in configs.items():
        assert config.name == name
        assert config.max_batch_size == settings.max_batch_size
    python_models = {"preprocessing", "postprocessing", "stream_gate", "tensorrt_llm_bls"} | (
        {llm} if stand_in or llm == "neuron_llm" else set()
    )
    for name in configs:
        has_code = (tmp_path / "repo" / name / "1" / "model.py").is_file()
        assert has_code == (name in python_models), name
    assert configs["ensemble"].platform == "ensemble"
    # postprocessing sees each whole stream: it calls the LLM step, so it streams like it
    assert configs["postprocessing"].model_transaction_policy.decoupled is settings.streaming
    steps = [s.model_name for s in configs["ensemble"].ensemble_scheduling.step]
    assert steps == ["preprocessing", "postprocessing", "stream_gate"]
    # The gate is where a client's cancel shows: one instance (ordered), no dynamic batching (whose queue
    # drops a cancelled request unexecuted).
    assert configs["stream_gate"].instance_group[0].count == 1
    assert not configs["stream_gate"].HasField("dynamic_batching")
    expected_backend = "python" if stand_in or llm == "neuron_llm" else "tensorrtllm"
    assert configs[llm].backend == expected_backend
    assert configs[llm].model_transaction_policy.decoupled is settings.streaming
    assert configs["tensorrt_llm_bls"].model_transaction_policy.decoupled is settings.streaming


def test_tensorrt_llm_parameters_come_from_the_settings(serving, tmp_path):
    prod = serving["prod"]
    config = _render(prod, tmp_path)["tensorrt_llm"]
    params = _params(config)
    assert params["gpt_model_type"] == "inflight_fused_batching"
    assert params["gpt_model_path"] == str(ENGINE)
    assert params["batch_scheduler_policy"] == prod.batching.scheduler_policy
    assert float(params["kv_cache_free_gpu_mem_fraction"]) == prod.kv_cache.free_gpu_mem_fraction
    assert params["enable_kv_cache_reuse"] == "true" and params["enable_chunked_context"] == "true"
    assert params["exclude_input_in_output"] == "true"
    assert params["participant_ids"] == "0,1,2,3" and params["gpu_device_ids"] == "0,1,2,3"
    assert params["num_nodes"] == "1" and params["max_beam_width"] == "1"
    assert params["decoding_mode"] == "top_k_top_p"
    assert params["guided_decoding_backend"] == "xgrammar"
    assert params["xgrammar_tokenizer_info_path"] == str(TOKENIZER / "xgrammar_tokenizer_info.json")
    assert params["max_tokens_in_paged_kv_cache"] == ""  # empty = the backend's default (no cap)
    assert params["executor_worker_path"] == "/opt/tritonserver/backends/tensorrtllm/trtllmExecutorWorker"
    batching = config.dynamic_batching
    assert batching.max_queue_delay_microseconds == 100
    assert batching.default_queue_policy.max_queue_size == 512


def test_optional_parameters_follow_the_settings(serving, tmp_path):
    settings = serving["dev"].model_copy(
        update={
            "nodes": 2,
            "tensor_parallel": 2,
            "kv_cache": serving["dev"].kv_cache.model_copy(update={"max_tokens": 100_000}),
            "guided_decoding": serving["dev"].guided_decoding.model_copy(update={"backend": "none"}),
        }
    )
    params = _params(_render(settings, tmp_path)["tensorrt_llm"])
    assert params["max_tokens_in_paged_kv_cache"] == "100000"
    assert params["decoding_mode"] == "top_k_top_p"
    assert params["medusa_choices"] == "" and params["eagle_choices"] == ""
    assert params["num_nodes"] == "2" and params["participant_ids"] == "0,1"
    assert params["gpu_device_ids"] == ""  # across nodes every rank picks its local GPU
    # Guided decoding off: the keys are still there (the C++ backend reads them with no fallback), empty.
    assert params["guided_decoding_backend"] == "" and params["xgrammar_tokenizer_info_path"] == ""
    assert params["tokenizer_dir"] == str(TOKENIZER)


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("stand_in", [None, StandIn()], ids=["production", "stand-in"])
def test_every_config_carries_every_key_of_nvidias_template(serving, tmp_path, stack, stand_in):
    """Against the recorded r25.05 key lists: all of NVIDIA's keys, ours only where declared."""
    for name, config in _render(serving[stack], tmp_path, stand_in).items():
        if name not in nvidia_keys.KEYS:
            continue  # neuron_llm is our own model
        expected = [*nvidia_keys.KEYS[name], *nvidia_keys.OUR_KEYS[name]]
        assert sorted(_params(config)) == sorted(expected), name
        assert len(expected) == len(set(expected)), name


def test_the_key_lists_name_their_source():
    assert nvidia_keys.SOURCE["branch"] == "r25.05"
    assert len(nvidia_keys.SOURCE["commit"]) == 40
    assert len(nvidia_keys.TENSORRT_LLM) == 45 and "enable_trt_overlap" not in nvidia_keys.TENSORRT_LLM
    for keys in (*nvidia_keys.KEYS.values(), *nvidia_keys.OUR_KEYS.values()):
        assert all(isinstance(key, str) and key for key in keys)


def test_a_key_outside_nvidias_list_cannot_render():
    with pytest.raises(RenderError, match="guided_decoding_backnd"):
        model_parameters("tensorrt_llm", {"guided_decoding_backnd": "xgrammar"})


def test_the_stand_in_loads_the_production_config_with_only_the_backend_swapped(serving, tmp_path):
    for stack in ("dev", "prod"):
        real = (tmp_path / stack / "real").joinpath
        _render(serving[stack], tmp_path / stack / "real")
        _render(serving[stack], tmp_path / stack / "stand-in", StandIn(first_token_delay_ms=7, token_delay_ms=3))
        stand_in = (tmp_path / stack / "stand-in" / "repo" / "tensorrt_llm").joinpath
        production = (tmp_path / stack / "real" / "repo" / "tensorrt_llm" / "config.pbtxt").read_text()
        # The local Triton 2.51 (24.10) predates model_metrics: the stand-in's copy has no histogram block.
        production_lines = production[: production.index("model_metrics {")].splitlines()
        stand_in_lines = stand_in("config.pbtxt").read_text().splitlines()
        changed = [(a, b) for a, b in zip(production_lines, stand_in_lines, strict=True) if a != b]
        assert changed == [('backend: "tensorrtllm"', 'backend: "python"')], stack
        assert json.loads(stand_in("1", "stand_in.json").read_text()) == {
            "first_token_delay_ms": 7,
            "token_delay_ms": 3,
        }
        assert "TEST DOUBLE" in stand_in("1", "model.py").read_text()
        assert not real("repo", "tensorrt_llm", "1", "model.py").exists()


def test_the_ensemble_wires_every_step_to_real_tensors(serving, tmp_path):
    for stack in STACKS:
        configs = _render(serving[stack], tmp_path / stack)
        ensemble = configs["ensemble"]
        available = {i.name for i in ensemble.input}
        produced: set[str] = set()
        for step in ensemble.ensemble_scheduling.step:
            model = configs[step.model_name]
            inputs = {i.name for i in model.input}
            outputs = {o.name for o in model.output}
            assert set(step.input_map) <= inputs, (stack, step.model_name)
            assert set(step.output_map) <= outputs, (stack, step.model_name)
            required = {i.name for i in model.input if not i.optional}
            assert required <= set(step.input_map), (stack, step.model_name, required - set(step.input_map))
            assert set(step.input_map.values()) <= available | produced, (stack, step.model_name)
            produced |= set(step.output_map.values())
        assert {o.name for o in ensemble.output} <= produced


def test_the_client_contract_is_nvidias(serving, tmp_path):
    configs = _render(serving["dev"], tmp_path)
    for name in ("ensemble", "tensorrt_llm_bls"):
        inputs = {i.name: i for i in configs[name].input}
        for required in ("text_input", "max_tokens"):
            assert not inputs[required].optional
        for optional in ("bad_words", "stop_words", "end_id", "pad_id", "temperature", "top_k", "top_p", "stream"):
            assert inputs[optional].optional, optional
        assert "text_output" in {o.name for o in configs[name].output}
    assert _io(configs["ensemble"]) == _io(configs["tensorrt_llm_bls"])


def test_postprocessing_takes_the_llm_steps_inputs_and_passes_its_outputs_on(serving, tmp_path):
    configs = _render(serving["dev"], tmp_path)
    llm_inputs, llm_outputs = _io(configs["tensorrt_llm"])
    post_inputs, post_outputs = _io(configs["postprocessing"])
    assert post_inputs == llm_inputs
    assert post_outputs[0][0] == "OUTPUT" and post_outputs[-1][0] == "LLM_REQUEST_ID"
    assert post_outputs[1:-1] == [o for o in llm_outputs if o[0] not in ("output_ids", "sequence_length")]
    # stream_gate passes every output but the LLM request's id on, unchanged.
    gate_inputs, gate_outputs = _io(configs["stream_gate"])
    assert [i[:3] for i in gate_inputs] == post_outputs and all(i[3] for i in gate_inputs)
    assert gate_outputs == [("GATED_" + o[0], *o[1:]) for o in post_outputs[:-1]]
    assert _params(configs["stream_gate"])["tensorrt_llm_model_name"] == "tensorrt_llm"
    assert _params(configs["postprocessing"])["tensorrt_llm_model_name"] == "tensorrt_llm"


def test_the_stand_in_and_neuron_llm_have_the_tensorrt_llm_tensors(serving, tmp_path):
    real = _render(serving["dev"], tmp_path / "real")["tensorrt_llm"]
    stand_in = _render(serving["dev"], tmp_path / "stand-in", StandIn())["tensorrt_llm"]
    neuron = _render(serving["npu"], tmp_path / "npu")["neuron_llm"]
    assert _io(stand_in) == _io(real) == _io(neuron)
    names = {i.name for i in real.input}
    for tensor in ("input_ids", "input_lengths", "request_output_len", "end_id", "pad_id", "streaming", "temperature"):
        assert tensor in names
    assert {"output_ids", "sequence_length"} <= {o.name for o in real.output}


def test_all_problems_of_all_templates_are_reported_together(serving):
    plans = plan_repository(serving["dev"], engine_dir=ENGINE, tokenizer_dir=TOKENIZER)
    broken = []
    for plan in plans:
        values = dict(plan.values)
        values.pop("max_batch_size")
        values["surplus"] = 1
        broken.append(type(plan)(plan.name, plan.package, values))
    with pytest.raises(RenderError) as err:
        render_configs(broken)
    assert len(err.value.problems) == 2 * len(plans)
    assert all("max_batch_size" in p or "surplus" in p for p in err.value.problems)


def test_a_path_that_breaks_pbtxt_is_refused_before_anything_is_written(serving, tmp_path):
    with pytest.raises(RenderError, match="tokenizer_dir"):
        render_repository(serving["dev"], tmp_path / "repo", engine_dir=ENGINE, tokenizer_dir=Path('/models/"x"'))
    assert list(tmp_path.iterdir()) == []


def test_the_repository_appears_only_complete(serving, tmp_path, monkeypatch):
    destination = tmp_path / "repo"
    destination.mkdir()
    with pytest.raises(RenderError, match="already exists"):
        render_repository(serving["dev"], destination, engine_dir=ENGINE, tokenizer_dir=TOKENIZER)
    destination.rmdir()

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("inference_platform.inference_image.repository.os.rename", fail)
    with pytest.raises(OSError, match="disk full"):
        render_repository(serving["dev"], destination, engine_dir=ENGINE, tokenizer_dir=TOKENIZER)
    assert list(tmp_path.iterdir()) == []  # neither the destination nor the staging directory


def test_templates_and_model_code_ship_as_package_data():
    root = resources.files("inference_platform.inference_image.model_repository")
    for model in ("ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "neuron_llm", "tensorrt_llm_bls"):
        assert (root / model / "config.pbtxt.tmpl").is_file()
    for model in ("preprocessing", "postprocessing", "stream_gate", "neuron_llm", "tensorrt_llm_bls"):
        assert (root / model / "model.py").is_file()
    assert (resources.files("inference_platform.inference_image.testing.cpu_llm") / "config.pbtxt.tmpl").is_file()


@pytest.mark.parametrize("stack", STACKS)
def test_ttft_histograms_have_llm_buckets_and_the_stacks_slo_bounds(serving, tmp_path, stack):
    settings = serving[stack]
    configs = _render(settings, tmp_path)
    slo = settings.slo
    for name in ("ensemble", "tensorrt_llm_bls", settings.llm_model_name):
        (control,) = configs[name].model_metrics.metric_control
        assert control.metric_identifier.family == "nv_inference_first_response_histogram_ms"
        buckets = list(control.histogram_options.buckets)
        assert buckets == sorted(set(buckets)) and {slo.ttft_p50_ms, slo.ttft_p95_ms} <= set(buckets), name
        # Triton's defaults (100, 500, 2000, 5000) cannot place a p95 between 500 ms and 2 s.
        assert len([b for b in buckets if 500 < b < 2000]) >= 3, name
    assert not configs["preprocessing"].HasField("model_metrics")
    stand_in = _render(settings, tmp_path / "stand-in", StandIn())
    assert not any(config.HasField("model_metrics") for config in stand_in.values())
