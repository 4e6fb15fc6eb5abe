"""Issue 28 (bad input), settings that passed before and failed inside the program or at ``pulumi up``:

- a served model id that cannot be a URL path exits 2 naming ``serving.model`` (a bare ValueError before);
- the Batch API's and workers' memory is held to the system nodes, as their vCPU already was (one pod on one
  node; the lane at its ceiling in the group at its largest);
- two settings planning one physical name (the inference and batch ECR repositories) exit 2 naming both."""

from __future__ import annotations

import pytest
import yaml

from inference_platform.catalog import models
from inference_platform.inferctl.cli import main
from tests.settings.test_contradictions import STACKS, problems


def _architecture() -> dict:
    arch = models.architecture("Llama-3.1-8B")
    return {"layers": arch.layers, "hiddenSize": arch.hidden_size, "attentionHeads": arch.attention_heads,
            "kvHeads": arch.kv_heads, "headDim": arch.head_dim, "paramsTotal": arch.params_total,
            "vocabSize": arch.vocab_size}  # fmt: skip


@pytest.mark.parametrize("model", ["my model", "team/../llama", "llama?x=1", "a//b", "llama#8b", "/llama", "ll%61ma"])
def test_a_model_id_that_cannot_be_a_url_path_exits_2_naming_serving_model(tmp_path, capsys, model):
    doc = yaml.safe_load((STACKS / "Pulumi.dev.yaml").read_text())
    serving = doc["config"]["inference-platform:serving"]
    serving.update({"model": model, "architecture": _architecture()})
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump(doc))
    code = main(["plan", "--stack", "dev", "--stack-file", str(tmp_path / "Pulumi.dev.yaml"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "serving.model" in err and "URL path" in err and "Traceback" not in err and "ValueError" not in err, err


def test_a_model_id_with_an_owner_plans(tmp_path, capsys):
    found = problems("dev", {"serving.model": "acme/llama-3.1-8b-ft.v2", "serving.architecture": _architecture()})
    assert "serving.model" not in found, found


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_a_batch_pod_larger_than_a_system_node_is_refused(stack):
    found = problems(stack, {"batch.api.memoryGib": 60})
    assert list(found) == ["batch.api.memoryGib"], found
    assert "system node" in found["batch.api.memoryGib"] and "Pending" in found["batch.api.memoryGib"]
    found = problems(stack, {"batch.workers.memoryGib": 60})
    assert list(found) == ["batch.workers.memoryGib"], found


def test_the_lane_at_its_ceiling_must_fit_the_system_group_in_memory():
    # 10 API replicas x 12 GiB: each fits a node (13.7 GiB left to pods), together more than the group holds.
    found = problems("prod", {"batch.api.memoryGib": 12, "batch.api.replicas": 10})
    assert "batch.api.memoryGib" in found and "more than the system node group" in found["batch.api.memoryGib"]
    assert "batch.api.memoryGib" not in problems("prod", {"batch.api.memoryGib": 4})


@pytest.mark.parametrize(
    ("edits", "key", "other"),
    [
        ({"batch.image.repository": "inference"}, "batch.image.repository", "inference.image.repository"),
        ({"inference.image.repository": "batch"}, "batch.image.repository", "inference.image.repository"),
        ({"verification.image.repository": "inference"}, "verification.image.repository", "inference.image.repository"),
        ({"verification.image.repository": "batch"}, "verification.image.repository", "batch.image.repository"),
    ],
)
def test_two_settings_planning_one_physical_name_exit_2_naming_both(tmp_path, capsys, edits, key, other):
    found = problems("prod", edits)
    assert list(found) == [key], found
    assert other in found[key] and "ECR repository" in found[key]
    doc = yaml.safe_load((STACKS / "Pulumi.prod.yaml").read_text())
    for dotted, value in edits.items():
        section, *path = dotted.split(".")
        node = doc["config"].setdefault(f"inference-platform:{section}", {})
        for step in path[:-1]:
            node = node.setdefault(step, {})
        node[path[-1]] = value
    (tmp_path / "Pulumi.prod.yaml").write_text(yaml.safe_dump(doc))
    code = main(["plan", "--stack", "prod", "--stack-file", str(tmp_path / "Pulumi.prod.yaml"), "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and key in err and other in err, err


def test_the_batch_repository_beside_a_disabled_lane_is_no_collision():
    assert problems("dev", {"batch.image.repository": "inference"}) == {}
