"""Issue 28 (security): no setting value that can carry a credential is ever printed.

The class, not the case: every string leaf of every section (tests/security/setting_paths.py walks the
models) gets each kind of credential a user pastes by mistake (a URL's ``user:token@``, a signed query, a
token of a known shape, a scheme-less ``user:password@host``). Each is refused (a plain setting must not
hold one: settings/__init__.py _credential_problems) naming its key, and the credential appears in no
problem. Then every output path of ``inferctl plan`` is fed one: the settings error, the program's log,
a component's argument error, a policy violation, the plan JSON, the PR-comment Markdown, the tree, the
manifests and anything a command prints (inferctl/cli.py's ScrubbingWriter)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from inference_platform.errors import CommandError
from inference_platform.inferctl.cli import main
from inference_platform.redaction import REDACTED, ScrubbingWriter, carries_credential, scrub
from inference_platform.settings import SettingsError, load_settings
from inference_platform.settings.base import Problem, describe
from tests.security.setting_paths import dotted, put, string_paths
from tests.settings.test_contradictions import PROJECT, stack_values

SECRET = "S3cr3tT0kenXYZ"
AKIA = "AKIAIOSFODNN7EXAMPLE"
# Each a value a user could paste into a string setting; each hides SECRET (or a key id) from every output.
CREDENTIAL_VALUES = [
    f"https://alice:{SECRET}@models.example.com/llama",
    f"https://{SECRET}@github.com/org/repo.git",
    f"s3://bucket/key?X-Amz-Signature={SECRET}&X-Amz-Date=20260101",
    f"alice:{SECRET}@registry.example.com/image",
    f"HF_TOKEN={SECRET}",
    f"{AKIA}",
    f"hf_{SECRET}abcdefghijkl",
]
PATHS = string_paths()


def hidden(text: str) -> bool:
    return SECRET not in text and AKIA not in text


def test_the_walk_finds_the_url_keys_of_the_issue():
    found = {dotted(*p) for p in PATHS}
    assert {"loadTest.url", "verification.url", "verification.prometheusUrl", "serving.artifacts.engineUri",
            "inference.image.repository", "tags.extra.<key>"} <= found  # fmt: skip
    assert len(PATHS) > 100


@pytest.mark.parametrize("stack", ["dev", "prod"])
@pytest.mark.parametrize(("section", "path"), PATHS, ids=[dotted(*p) for p in PATHS])
def test_every_string_setting_refuses_a_credential_and_never_echoes_it(stack, section, path):
    base, region = stack_values(stack)
    for value in CREDENTIAL_VALUES:
        values = put(copy.deepcopy(base), section, path, value)
        with pytest.raises(SettingsError) as err:
            load_settings(values, project=PROJECT, stack=stack, region=region)
        text = str(err.value)
        assert hidden(text), f"{dotted(section, path)} = {value!r} echoed:\n{text}"
        where = dotted(section, path).replace(".<key>", "")
        assert any(p.path.startswith(where) for p in err.value.problems), (where, text)
        assert any("credential" in p.message for p in err.value.problems), text


def test_a_credential_is_redacted_before_a_long_value_is_cut_short():
    value = "https://alice:" + SECRET + "@" + "a" * 200 + ".example.com"
    assert hidden(describe(value)) and REDACTED in describe(value)
    cut = "https://alice:" + SECRET + "x" * 100 + "@host.example.com"  # cut at 80 characters: before the '@'
    assert hidden(describe(cut)), describe(cut)


def test_problems_errors_and_component_errors_scrub_what_they_quote():
    from inference_platform.components.common.errors import ComponentArgsError

    url = f"https://bob:{SECRET}@h.example.com"
    assert hidden(str(Problem("x.url", f"got {url!r}")))
    assert hidden(str(Problem(f"tags.extra.{AKIA}", "bad")))
    assert hidden(str(CommandError(f"cannot reach {url}")))
    assert hidden(str(ComponentArgsError("Thing", [f"url {url!r} refused"])))


def test_the_scrubbing_writer_sees_a_credential_split_across_writes():
    import io

    sink = io.StringIO()
    out = ScrubbingWriter(sink)
    out.write("url https://bob:")
    out.write(f"{SECRET}@h.example.com and more")
    out.write("\n")
    out.write(f"tail {AKIA}")
    out.flush()
    assert hidden(sink.getvalue()) and sink.getvalue().count(REDACTED) == 2, sink.getvalue()


@pytest.mark.parametrize(
    "text",
    [
        "serving.model: got 'Llama-3.1-8B'; expected one of ...",
        "arn:aws:iam::123456789012:role/inference-reader",
        "nvcr.io/nvidia/tritonserver:25.05-trtllm-python-py3@sha256:" + "a" * 64,
        "https://api.dev.example.com/v1/chat/completions?stream=true",
        "mail ml-platform@example.com; maxNumTokens=4096; tokens_per_block=32",
        "http://[::1]:8080/v1",
        "s3://bucket/llama-3.1-8b-instruct/fp8-tp1-sm89/2026-11-30/",
    ],
)
def test_what_is_not_a_credential_is_left_alone(text):
    assert scrub(text) == text and not carries_credential(text)


def _stack_file(tmp_path: Path, stack: str, edits: dict[str, dict]) -> Path:
    doc = yaml.safe_load((Path(__file__).resolve().parents[2] / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    for key, value in edits.items():
        section = doc["config"].setdefault(f"{PROJECT}:{key}", {})
        section.update(value)
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_inferctl_plan_never_prints_a_url_credential(tmp_path, capsys, stack):
    """The issue's own case: a URL setting carrying ``user:token@``, planned in dev and prod."""
    file = _stack_file(
        tmp_path, stack, {"loadTest": {"url": f"https://ci:{SECRET}@api.example.com"},
                          "verification": {"prometheusUrl": f"http://x:{SECRET}@prometheus.example.com:9090"}}
    )  # fmt: skip
    code = main(["plan", "--stack", stack, "--stack-file", str(file), "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert code == 2
    assert "loadTest.url" in captured.err and "verification.prometheusUrl" in captured.err, captured.err
    assert hidden(captured.out + captured.err), captured.err


def test_every_output_of_a_plan_is_scrubbed(tmp_path, capsys):
    """A credential that reaches the program anyway (another team's program, a component's input): the
    plan's JSON, Markdown (the PR comment), tree, manifests, log lines and violations never show it."""
    import pulumi
    import pulumi_kubernetes as k8s

    from inference_platform.inferctl.plan.report import Plan, markdown, tree, write
    from inference_platform.offline_plan.engine import run_function
    from inference_platform.offline_plan.manifests import write_manifests
    from inference_platform.offline_plan.policy_runner import evaluate
    from inference_platform.policies.pack import POLICIES

    url = f"https://bob:{SECRET}@models.example.com/v1?sig={SECRET}"

    def program() -> None:
        pulumi.log.warn(f"fetching {url}")
        k8s.core.v1.ConfigMap(f"cm-{AKIA}", metadata={"name": "leaky", "namespace": "default"},
                              data={"url": url, "key": AKIA})  # fmt: skip
        k8s.core.v1.Pod(
            "pod",
            metadata={"name": "p", "namespace": "default"},
            spec={"containers": [{"name": "c", "image": "registry.example.com/x:latest", "args": [url]}]},
        )
        pulumi.export("endpoint", url)

    run = run_function(program)
    violations = evaluate(run.resources, POLICIES)
    assert violations  # the pod breaks several rules; their messages must not quote the credential
    plan = Plan(run, violations, [p.name for p in POLICIES])
    json_path, md_path = write(plan, tmp_path)
    written = write_manifests(run.resources, tmp_path / "manifests")
    texts = {
        "json": json_path.read_text(),
        "markdown": md_path.read_text() + markdown(plan),
        "tree": tree(plan),
        "logs": "\n".join(run.logs),
        "violations": "\n".join(v.message for v in violations),
        **{p.name: p.read_text() for p in written},
    }
    assert any(url.split("@")[1].split("?")[0] in t for t in texts.values())  # the rest of the value is kept
    leaks = [name for name, text in texts.items() if not hidden(text)]
    assert not leaks, {n: texts[n][:400] for n in leaks}
    assert json.loads(texts["json"])["outputs"]["endpoint"].startswith("https://[redacted]@")
    capsys.readouterr()
