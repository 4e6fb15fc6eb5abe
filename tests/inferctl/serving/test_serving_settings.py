"""The ``serving`` settings section: stack values, every problem named by key, accelerator checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import yaml

from inference_platform import catalog
from inference_platform.catalog import models
from inference_platform.errors import CommandError
from inference_platform.settings import SettingsError, load_settings, stack_files
from inference_platform.settings.base import CheckContext, validation_problems
from inference_platform.settings.serving import NodePoolLookup, ServingSettings, accelerator_problems
from inference_platform.settings.stack_files import REPO_ROOT as REPO

BASE = {"tags": {"owner": "team", "costCenter": "cc"}}


def _load(serving: dict[str, Any], *, environment: str = "development", **sections: Any) -> Any:
    return load_settings(
        {**BASE, **sections, "environment": environment, "serving": serving}, project="p", stack="s", region="us-east-1"
    )


def _problems(serving: dict[str, Any], **kwargs: Any) -> list[str]:
    with pytest.raises(SettingsError) as err:
        _load(serving, **kwargs)
    return [str(p) for p in err.value.problems]


def test_every_stack_has_a_valid_serving_section():
    dev, prod, npu = (stack_files.load(s).serving for s in ("dev", "prod", "npu"))
    assert (dev.model, dev.precision, dev.tensor_parallel, dev.backend) == ("Llama-3.1-8B", "fp8", 1, "tensorrtllm")
    assert (prod.model, prod.precision, prod.tensor_parallel) == ("Llama-3.1-70B", "fp8", 4)
    assert (npu.backend, npu.precision, npu.tensor_parallel, npu.llm_model_name) == ("neuron", "bf16", 8, "neuron_llm")
    # prod and npu check keys at the gateway (edge.auth); Triton's own key is off behind it.
    assert not (prod.auth.enabled or npu.auth.enabled or dev.auth.enabled)


@pytest.mark.parametrize(
    ("stack", "pools"),
    [
        ("dev", ["g6.xlarge", "g6.2xlarge"]),
        ("prod", ["p5.48xlarge", "p5en.48xlarge"]),
        ("npu", ["inf2.24xlarge", "inf2.48xlarge"]),
    ],
)
def test_each_stack_fits_its_intended_accelerators(stack, pools):
    serving = stack_files.load(stack).serving
    for instance_type in pools:
        assert accelerator_problems(serving, instance_type) == [], instance_type


def test_prod_tensor_parallel_is_the_smallest_that_leaves_kv_cache_room():
    prod = stack_files.load("prod").serving
    smallest = models.min_tensor_parallel(
        prod.model, prod.precision, "p5.48xlarge", 0.3, 8192, prod.max_batch_size, prod.kv_cache.dtype
    )
    assert prod.tensor_parallel == smallest == 4


def test_defaults_are_what_the_docstrings_say():
    serving = ServingSettings()
    assert (serving.model, serving.precision, serving.max_batch_size, serving.streaming) == (
        "Llama-3.1-8B",
        "bf16",
        64,
        True,
    )
    assert serving.kv_cache.free_gpu_mem_fraction == 0.9 and serving.batching.scheduler_policy == "guaranteed_no_evict"
    assert serving.server.model_control_mode == "none" and serving.auth.header == "x-api-key"
    assert "health" not in serving.auth.restricted_apis


def test_unknown_keys_and_bad_values_are_named_by_their_stack_file_path():
    problems = _problems(
        {"maxBatchSize": 0, "kvCache": {"freeGpuMemFraction": 1.5, "enableReus": True}, "precison": "fp8"}
    )
    assert any(p.startswith("serving.maxBatchSize:") for p in problems)
    for bad in (0, 65, 2.5):
        (problem,) = _problems({"batching": {"streamInterval": bad}})
        assert problem.startswith("serving.batching.streamInterval:"), problem
    assert any(p.startswith("serving.kvCache.freeGpuMemFraction:") for p in problems)
    assert any("serving.kvCache.enableReus: unknown key (did you mean 'enableReuse'?)" in p for p in problems)
    assert any("serving.precison: unknown key (did you mean 'precision'?)" in p for p in problems)
    assert any(
        p.startswith("serving.precision:")
        for p in [str(x) for x in validation_problems(ServingSettings, {"precision": "fp6"}, "serving")]
    )


def test_every_semantic_problem_is_reported_at_once():
    problems = _problems(
        {
            "model": "Llama-3.1-8B",
            "tensorParallel": 3,
            "maxInputLen": 9000,
            "maxSeqLen": 8192,
            "speculative": {"method": "eagle3"},
            "slo": {"ttftP50Ms": 900, "ttftP95Ms": 100},
            "auth": {"enabled": True, "keyFile": None},
        }
    )
    assert "serving.tensorParallel: got 3; Llama-3.1-8B: 32 attention heads do not divide by TP 3" in problems
    assert any(p.startswith("serving.maxInputLen: got 9000") for p in problems)
    assert "serving.speculative.maxDraftLen: missing; required with method eagle3" in problems
    assert any(p.startswith("serving.speculative.draftModel: missing; method eagle3 drafts") for p in problems)
    assert any(p.startswith("serving.slo.ttftP95Ms") for p in problems)
    assert "serving.auth: set exactly one of keyFile and keyEnv" in problems


def test_an_unknown_model_needs_its_architecture():
    problems = _problems({"model": "Acme-13B"})
    assert any(
        p.startswith("serving.model: unknown model 'Acme-13B'") and "serving.architecture" in p for p in problems
    )
    custom = {
        "model": "Acme-13B",
        "architecture": {
            "layers": 40,
            "hiddenSize": 5120,
            "attentionHeads": 40,
            "kvHeads": 8,
            "headDim": 128,
            "paramsTotal": 13e9,
            "vocabSize": 32000,
        },
    }
    settings = _load(custom)
    assert settings.serving.resolved_architecture().layers == 40
    broken = {**custom, "architecture": {**custom["architecture"], "kvHeads": 7}}
    assert any(p.startswith("serving.architecture:") and "multiple of kv_heads" in p for p in _problems(broken))


def test_production_requires_api_keys_in_the_pod_without_gateway_keys():
    # With the edge section's API keys (on by default) the in-pod key is optional: tests/inference_image/test_api_key.py.
    problems = [
        str(p) for p in ServingSettings().problems(CheckContext(stack="s", environment="production", region=None))
    ]
    assert any(p.startswith("serving.auth.enabled: production serves a public API: set true") for p in problems)


def test_neuron_refuses_what_its_serving_path_lacks():
    problems = _problems(
        {
            "backend": "neuron",
            "guidedDecoding": {"backend": "xgrammar"},
            "speculative": {"method": "ngram", "maxDraftLen": 3},
            "kvCache": {"hostCacheFraction": 0.1},
            "batching": {"overlapScheduler": True, "streamInterval": 4},
        }
    )
    assert (
        "serving.batching.streamInterval: 4: the Neuron path streams every token (only TensorRT-LLM's LLM API takes "
        "stream_interval)" in problems
    )
    assert "serving.guidedDecoding.backend: xgrammar is not available on Neuron" in problems
    assert "serving.speculative.method: ngram is not available on Neuron" in problems
    assert "serving.kvCache.hostCacheFraction: the Neuron path has no host KV-cache tier" in problems
    assert "serving.batching.overlapScheduler: true: the Neuron path has no overlap scheduler" in problems


@pytest.mark.parametrize(
    ("values", "key", "words"),
    [
        (
            {"speculative": {"method": "ngram", "maxDraftLen": 4, "draftModel": "s3://models-bucket/eagle3/1/"}},
            "speculative.draftModel",
            "only eagle3",
        ),
        ({"speculative": {"maxDraftLen": 4}}, "speculative.maxDraftLen", "set without a speculative method"),
        (
            {"speculative": {"method": "mtp", "maxDraftLen": 1, "maxMatchingNgramSize": 3}},
            "speculative.maxMatchingNgramSize",
            "ngram only",
        ),
        (
            {"speculative": {"method": "medusa", "maxDraftLen": 4}},
            "speculative.method",
            "expected 'none', 'eagle3', 'mtp', 'ngram'",
        ),
        (
            {"speculative": {"method": "eagle3", "maxDraftLen": 0, "draftModel": "x/y"}},
            "speculative.maxDraftLen",
            "greater than or equal to 1",
        ),
        (
            {"kvCache": {"enableReuse": False, "hostCacheFraction": 0.2}},
            "kvCache.hostCacheFraction",
            "needs kvCache.enableReuse",
        ),
        ({"kvCache": {"hostCacheFraction": 0.9}}, "kvCache.hostCacheFraction", "less than or equal to 0.5"),
        ({"guidedDecoding": {"backend": "outlines"}}, "guidedDecoding.backend", "'xgrammar' or 'llguidance'"),
        ({"precision": "int4_awq"}, "precision", "LLM API serves bf16, fp16, fp8, fp4"),
        (
            {
                "speculative": {
                    "method": "eagle3",
                    "maxDraftLen": 3,
                    "draftModel": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                }
            },
            "speculative.draftModel",
            "nothing unverified is served",
        ),
        ({"kvCache": {"dtype": "int8"}}, "kvCache.dtype", "auto (the model's dtype) or fp8"),
    ],
)
def test_the_llm_api_features_are_validated(values, key, words):
    problems = _problems({"model": "Llama-3.1-8B", **values})
    line = next((p for p in problems if p.startswith(f"serving.{key}:")), "")
    assert words in line, problems


@pytest.mark.parametrize(
    ("values", "key", "replacement"),
    [
        ({"build": {"enabled": True}}, "serving.build", "no engine is built any more"),
        ({"speculative": {"mode": "medusa"}}, "serving.speculative.mode", "use speculative.method"),
        ({"speculative": {"draftLength": 4}}, "serving.speculative.draftLength", "use speculative.maxDraftLen"),
        ({"speculative": {"choices": [[0]]}}, "serving.speculative.choices", "one linear chain"),
    ],
)
def test_keys_of_the_engine_flow_are_refused_with_what_replaces_them(values, key, replacement):
    problems = _problems({"model": "Llama-3.1-8B", **values})
    line = next((p for p in problems if p.startswith(f"{key}:")), "")
    assert line.startswith(f"{key}: no longer a setting:") and replacement in line, problems


def test_neuron_refuses_settings_that_assume_in_flight_batching():
    problems = _problems({"backend": "neuron", "batching": {"schedulerPolicy": "max_utilization"}})
    static = "the Neuron path batches statically"
    assert any(p.startswith("serving.batching.schedulerPolicy: max_utilization") and static in p for p in problems)
    # The GPU defaults (KV reuse, chunked prefill) are refused on Neuron: the npu stack turns them off.
    assert any(p.startswith("serving.kvCache.enableReuse: true") for p in problems)
    assert any(p.startswith("serving.kvCache.enableChunkedContext: true") for p in problems)
    _load({"backend": "neuron", "kvCache": {"enableReuse": False, "enableChunkedContext": False}})


@pytest.mark.parametrize(
    ("serving", "instance_type", "expected"),
    [
        ({"precision": "fp8"}, "g5.xlarge", "serving.precision: fp8 does not run on g5.xlarge (a10g, sm86)"),
        ({"precision": "bf16", "kvCache": {"dtype": "fp8"}}, "g5.12xlarge", "serving.kvCache.dtype: fp8 does not run"),
        ({"tensorParallel": 8}, "g6.12xlarge", "needs 8 GPUs per node; g6.12xlarge has 4 and no multi-node set"),
        ({"tensorParallel": 4, "pipelineParallel": 2}, "g6.12xlarge", "= 8 ranks over 1 node(s)"),
        ({"model": "Llama-3.1-70B", "precision": "bf16"}, "g6e.xlarge", "less than one maxSeqLen sequence"),
        ({"backend": "neuron"}, "g6.xlarge", "serving.backend: neuron needs neuron accelerators"),
        (
            {"backend": "neuron", "precision": "fp8"},
            "inf2.xlarge",
            "serving.precision: fp8 does not run on inf2.xlarge",
        ),
    ],
)
def test_accelerator_checks_name_the_serving_key(serving, instance_type, expected):
    settings = ServingSettings.model_validate(serving)
    assert any(expected in str(p) for p in accelerator_problems(settings, instance_type)), [
        str(p) for p in accelerator_problems(settings, instance_type)
    ]


def test_multi_node_spreads_ranks_over_nodes():
    settings = ServingSettings.model_validate(
        {"model": "Llama-3.1-405B", "precision": "fp8", "tensorParallel": 8, "pipelineParallel": 2, "nodes": 2}
    )
    assert accelerator_problems(settings, "p5.48xlarge") == []
    uneven = _problems({"tensorParallel": 8, "pipelineParallel": 1, "nodes": 3})
    assert any(p.startswith("serving.nodes: got 3") for p in uneven)


class _Pools:
    """What the node-pool section must offer (inference_platform.settings.serving.NodePoolLookup)."""

    key = "nodePools"

    def __init__(self, pools: dict[str, Sequence[str]]) -> None:
        self.pools = pools

    def instance_types(self, pool: str) -> Sequence[str] | None:
        return self.pools.get(pool)


def test_with_a_node_pool_section_the_accelerator_checks_run_in_settings():
    def ctx(pools: dict[str, Sequence[str]]) -> CheckContext:
        return CheckContext(stack="s", environment="development", region=None, sections={"nodePools": _Pools(pools)})

    serving = ServingSettings.model_validate(
        {"precision": "fp8", "nodePool": "gpu", "maxBatchSize": 16, "kvCache": {"dtype": "fp8"}}
    )
    assert serving.problems(ctx({"gpu": ["g6.xlarge", "g6e.xlarge"]})) == []
    problems = [str(p) for p in serving.problems(ctx({"gpu": ["g6.xlarge", "g5.xlarge"]}))]
    assert problems and all("g5.xlarge" in p for p in problems)
    assert [str(p) for p in serving.problems(ctx({"other": ["g6.xlarge"]}))] == [
        "serving.nodePool: no node pool named 'gpu' in nodePools"
    ]


def test_the_stacks_node_pools_feed_the_accelerator_checks(tmp_path):
    """Section 5's bad input through the real loader: FP8 on an A10G pool is refused, naming the key."""
    settings = stack_files.load("dev")
    assert isinstance(settings.node_pools, NodePoolLookup)
    assert settings.node_pools.instance_types(settings.serving.node_pool) == ["g6.xlarge", "g6.2xlarge"]
    stack = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    stack["config"]["inference-platform:nodePools"]["inference"]["instanceTypes"] = ["g5.xlarge"]
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump(stack))
    with pytest.raises(CommandError) as err:
        stack_files.load("dev", stack_file=stack_file)
    assert err.value.exit_code == 2
    assert "serving.precision: fp8 does not run on g5.xlarge (a10g, sm86)" in str(err.value)


# --- KV-cache room for the whole batch at full length ---------------------------------------------------

PROD_SHAPE = {"model": "Llama-3.1-70B", "precision": "fp8", "tensorParallel": 4, "maxInputLen": 8192,
              "maxSeqLen": 16384, "kvCache": {"dtype": "fp8"}}  # fmt: skip


def _kv_problems(serving: dict[str, Any], instance_type: str) -> list[str]:
    settings = ServingSettings.model_validate(serving)
    return [str(p) for p in accelerator_problems(settings, instance_type) if "KV cache" in p.message]


def test_tp_4_on_h100_holds_64_full_sequences_of_70b_but_not_128():
    assert _kv_problems({**PROD_SHAPE, "maxBatchSize": 64}, "p5.48xlarge") == []
    (problem,) = _kv_problems({**PROD_SHAPE, "maxBatchSize": 128}, "p5.48xlarge")
    assert problem.startswith("serving.tensorParallel: got 4;")
    assert "1,358,452 tokens" in problem and "128 x maxSeqLen 16384 = 2,097,152 need 85.9 GB" in problem
    assert "tensorParallel 8 holds it on p5.48xlarge" in problem and "lower maxBatchSize to 82" in problem
    assert _kv_problems({**PROD_SHAPE, "maxBatchSize": 128}, "p5en.48xlarge") == []  # 141 GB per H200


def test_the_configured_free_fraction_counts_and_multi_node_shapes_get_a_general_hint():
    tight = {**PROD_SHAPE, "maxBatchSize": 64, "kvCache": {"dtype": "fp8", "freeGpuMemFraction": 0.6}}
    (problem,) = _kv_problems(tight, "p5.48xlarge")
    assert "freeGpuMemFraction 0.6" in problem and "tensorParallel 8 holds it" in problem
    pipelined = {**PROD_SHAPE, "tensorParallel": 2, "pipelineParallel": 2, "maxBatchSize": 128}
    (problem,) = _kv_problems(pipelined, "p5.48xlarge")
    assert "raise tensorParallel x pipelineParallel" in problem


@pytest.mark.parametrize("model", ["Llama-3.1-8B", "Llama-3.1-70B"])
@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "g6e.12xlarge"])
@pytest.mark.parametrize(("batch", "seq"), [(8, 4096), (64, 8192), (128, 16384), (256, 16384)])
def test_the_check_agrees_with_min_tensor_parallel(model, instance_type, batch, seq):
    """A power-of-two TP passes exactly when it is at least what models.min_tensor_parallel asks for."""
    try:
        needed = models.min_tensor_parallel(model, "fp8", instance_type, 0.0, seq, batch, "fp8")
    except models.SizingError:
        needed = None
    units = catalog.instance(instance_type).max_tensor_parallel
    for tp in (t for t in (1, 2, 4, 8) if t <= units):
        serving = {"model": model, "precision": "fp8", "tensorParallel": tp, "maxBatchSize": batch,
                   "maxInputLen": seq // 2, "maxSeqLen": seq, "kvCache": {"dtype": "fp8"}}  # fmt: skip
        fits = not [p for p in accelerator_problems(ServingSettings.model_validate(serving), instance_type)
                    if p.path == "serving.tensorParallel"]  # fmt: skip
        assert fits == (needed is not None and tp >= needed), (tp, needed)


def test_a_kv_token_cap_below_the_batch_is_named():
    capped = {**PROD_SHAPE, "maxBatchSize": 64, "kvCache": {"dtype": "fp8", "maxTokens": 500_000}}
    problems = [str(p) for p in accelerator_problems(ServingSettings.model_validate(capped), "p5.48xlarge")]
    assert problems == [
        "serving.kvCache.maxTokens: got 500000; below maxBatchSize 64 x maxSeqLen 16384 = 1048576: the cache "
        "would admit fewer sequences than the engine is built for"
    ]


def test_triton_cannot_check_the_key_the_gateway_strips():
    cert = "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    edge = {"domain": "api.example.com", "certificateArn": cert, "auth": {"clients": {"chat": {"tier": "standard"}}}}
    problems = _problems({"auth": {"enabled": True}}, edge=edge)
    assert any(p.startswith("serving.auth.enabled: true behind a gateway that authenticates on 'x-api-key'")
               for p in problems), problems  # fmt: skip


@pytest.mark.parametrize(
    ("values", "key", "words"),
    [
        ({"instances": {"bls": 8}}, "serving.instances", "the ensemble, BLS and pre/postprocessing models left"),
        ({"tokenizer": {"addSpecialTokens": False}}, "serving.tokenizer", "renders the chat template"),
        ({"excludeInputInOutput": False}, "serving.excludeInputInOutput", "never echo the prompt"),
        ({"batching": {"maxQueueSize": 512}}, "serving.batching.maxQueueSize", "queues and batches in flight"),
        ({"batching": {"maxQueueDelayMicroseconds": 100}}, "serving.batching.maxQueueDelayMicroseconds", "at once"),
    ],
)
def test_keys_the_six_model_repository_read_are_refused_unless_default(values, key, words):
    problems = _problems({"model": "Llama-3.1-8B", **values})
    line = next((p for p in problems if p.startswith(f"{key}:")), "")
    assert line.startswith(f"{key}: no longer used:") and words in line and line.endswith("remove it"), problems
    # A mounted settings file writes every default out: that still loads.
    assert _load({"model": "Llama-3.1-8B", "instances": {"bls": 4}}).serving.instances.bls == 4
