"""The endpoint picker on Neuron replicas (``serving.backend: neuron``, the npu stack): it reads the ``neuron_llm``
step's request gauges through a custom engine of its ``core-metrics-extractor``, instead of TensorRT-LLM's names,
which a Neuron replica never publishes (every read an extract error: ``EndpointPickerBlind`` fired on npu).

- the release selects its own config file, carried in the chart's ConfigMap, and that file's specs parse as the
  picker parses them and name the family, and the ``request_type`` values, the step publishes and the OpenAI server
  relays on the serving port (the only one the picker scrapes);
- every scorer the profile uses is declared, and none reads a gauge Neuron does not have (KV cache, prefix cache);
- the upstream facts behind it hold at llm-d-router v0.10.0 (tests/data/upstream/endpoint_picker_neuron_v0.10.0.json,
  re-read from the mirror when this machine has one);
- npu ships it, prod keeps the chart's own configuration for TensorRT-LLM.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from inference_platform.catalog import endpoint_picker as picker
from inference_platform.catalog.server_metrics import RELAYED_ENGINE_FAMILIES
from inference_platform.inference_image.runtime.request_gauges import NEURON_FAMILY, RequestGauges

FACTS = Path(__file__).parents[2] / "data" / "upstream" / "endpoint_picker_neuron_v0.10.0.json"
MIRROR = Path("/work/.mirror/llm-d+llm-d-router/repo")
# spec.go v0.10.0 (pinned in FACTS): the spec's structure, and unquoted label values quoted first.
METRIC_SPEC = re.compile(r"^\s*(\S+?)\s*(?:\{([^}]*)\})?\s*$")
ADD_QUOTES = re.compile(r"(\w+)\s*=\s*([^\",}\s]+)")
LABEL_PAIR = re.compile(r'^\s*(\S+?)\s*=\s*"([^"]*)"\s*$')
VALUES = picker.chart_values(
    serving_labels={"app": "x"}, serving_port=9000, system_affinity={}, tolerations=[], neuron=True
)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """A metric spec as the picker's ``parseStringToSpec`` reads it: family and required labels."""
    match = METRIC_SPEC.match(ADD_QUOTES.sub(r'\1="\2"', spec))
    assert match, spec
    labels = {}
    for pair in filter(None, (match.group(2) or "").split(",")):
        label = LABEL_PAIR.match(pair)
        assert label, (pair, spec)
        labels[label.group(1)] = label.group(2)
    return match.group(1), labels


def test_the_release_runs_the_neuron_configuration_it_carries() -> None:
    epp = VALUES["router"]["epp"]
    assert epp["pluginsConfigFile"] == picker.NEURON_PLUGINS_FILE
    assert yaml.safe_load(epp["pluginsCustomConfig"][picker.NEURON_PLUGINS_FILE]) == picker.neuron_plugins()
    plain = picker.chart_values(serving_labels={"app": "x"}, serving_port=9000, system_affinity={}, tolerations=[])
    assert "pluginsConfigFile" not in plain["router"]["epp"] and "pluginsCustomConfig" not in plain["router"]["epp"]


def test_the_neuron_engine_reads_what_the_step_publishes_and_the_server_relays() -> None:
    config = picker.neuron_plugins()
    (extractor,) = [p for p in config["plugins"] if p["type"] == "core-metrics-extractor"]
    parameters = extractor["parameters"]
    (engine,) = parameters["engineConfigs"]
    assert parameters["defaultEngine"] == engine["name"] == picker.NEURON_ENGINE
    specs = {key: value for key, value in engine.items() if key.endswith("Spec")}
    # Only what a Neuron replica has: no KV cache, LoRA or cache-info spec (an empty spec is none upstream).
    assert set(specs) == {"queuedRequestsSpec", "runningRequestsSpec"}
    read = {key: parse_spec(spec) for key, spec in specs.items()}
    assert read["queuedRequestsSpec"] == (NEURON_FAMILY, {"request_type": "waiting"})
    assert read["runningRequestsSpec"] == (NEURON_FAMILY, {"request_type": "active"})
    assert NEURON_FAMILY in RELAYED_ENGINE_FAMILIES
    published = neuron_step_samples()
    for family, labels in read.values():
        assert any(f == family and labels.items() <= sample.items() for f, sample in published), (family, labels)


def neuron_step_samples() -> list[tuple[str, dict[str, str]]]:
    """The samples the neuron_llm step's RequestGauges publishes through Triton's custom-metrics API, captured."""

    class Family:
        GAUGE = "gauge"

        def __init__(self, name: str, description: str, kind: str) -> None:
            self.name = name

        def Metric(self, labels: dict[str, str]) -> object:  # Triton's pb_utils API
            published.append((self.name, dict(labels)))
            return type("Gauge", (), {"set": lambda self, value: None})()

    published: list[tuple[str, dict[str, str]]] = []
    pb_utils = type("PbUtils", (), {"MetricFamily": Family})
    RequestGauges(pb_utils, family=NEURON_FAMILY, model="neuron_llm", version="1", max_active=4)
    return published


def test_every_scorer_is_declared_and_none_reads_a_gauge_neuron_lacks() -> None:
    config = picker.neuron_plugins()
    declared = {p.get("name", p["type"]) for p in config["plugins"]}
    (profile,) = config["schedulingProfiles"]
    used = {ref["pluginRef"] for ref in profile["plugins"]}
    assert used <= declared and used == {"queue-scorer", "running-requests-size-scorer"}
    assert not declared & {"kv-cache-utilization-scorer", "prefix-cache-scorer"}
    assert {"metrics-data-source", "core-metrics-extractor"} <= declared


@pytest.mark.parametrize("fact", json.loads(FACTS.read_text())["facts"], ids=lambda f: f"{f['path']}:{f['quote'][:30]}")
def test_the_upstream_facts_hold_at_their_tag(fact) -> None:
    if not (MIRROR / "HEAD").exists():
        pytest.skip("no mirror of llm-d/llm-d-router on this machine (fetch it to re-read the fact)")
    source = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{fact['ref']}:{fact['path']}"], capture_output=True, text=True, check=True
    ).stdout
    assert fact["quote"] in source


def test_the_spec_parser_port_matches_the_pinned_expressions() -> None:
    facts = {f["quote"] for f in json.loads(FACTS.read_text())["facts"]}
    assert f"var metricSpecRE = regexp.MustCompile(`{METRIC_SPEC.pattern}`)" in facts
    assert f"var addQuotesRE = regexp.MustCompile(`{ADD_QUOTES.pattern.replace(chr(92) + chr(34), chr(34))}`)" in facts
    assert parse_spec('x{a=b, c="d"}') == ("x", {"a": "b", "c": "d"})


@pytest.mark.parametrize(("stack", "neuron"), [("npu", True), ("prod", False)])
def test_the_shipped_picker_reads_its_replicas_engine(stack_plan, stack, neuron) -> None:
    (release,) = [
        r
        for r in stack_plan(stack).run.resources
        if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("name") == picker.RELEASE
    ]
    epp = release.inputs["values"]["router"]["epp"]
    assert (epp.get("pluginsConfigFile") == picker.NEURON_PLUGINS_FILE) is neuron
    if neuron:
        assert yaml.safe_load(epp["pluginsCustomConfig"][picker.NEURON_PLUGINS_FILE]) == picker.neuron_plugins()
    else:
        assert release.inputs["values"]["router"]["modelServers"]["type"] == picker.ENGINE_TYPE
