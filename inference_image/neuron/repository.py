"""The Neuron model repository: ``neuron_llm`` with the tensor contract of ``tensorrt_llm``.

One model, as on GPUs: the OpenAI server renders the chat template and calls it with the contract's tensors
(inference_image/llmapi/contract.py), so nothing of the removed ensemble (pre/postprocessing) remains. The
config carries what our model.py reads: the compiled model and tokenizer directories, the compiled batch size,
the sequence limit and the model's stop strings (the catalog's, as for ``tensorrt_llm``).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from importlib import resources
from pathlib import Path

import yaml

from inference_platform.catalog.stop_tokens import stop_tokens
from inference_platform.inference_image.llmapi import contract
from inference_platform.inference_image.openai_api.server_file import render_server_file
from inference_platform.inference_image.render import RenderError
from inference_platform.settings.serving import ServingSettings

MODEL_NAME = "neuron_llm"
VERSION_DIR = "1"
CODE_FILE = "model.py"
SERVER_FILE = "model.yaml"
"""What the OpenAI server reads of the model it fronts, under the LLM API's own names (model, tokenizer,
max_input_len, max_seq_len: inference_image/openai_api/config.py), so one reader serves both runtimes; the
Neuron model itself reads only its config.pbtxt parameters."""
_PACKAGE = "inference_platform.inference_image.neuron"
RUNTIME_LABEL = "NxD Inference (Neuron)"


def render_config(serving: ServingSettings, *, compiled_dir: Path, tokenizer_dir: Path) -> str:
    parameters = {
        "compiled_model_dir": str(compiled_dir),
        "tokenizer_dir": str(tokenizer_dir),
        "tensor_parallel": str(serving.tensor_parallel),
        "batch_size": str(serving.max_batch_size),
        "max_seq_len": str(serving.max_seq_len),
        contract.PARAMETER_STOP_WORDS: json.dumps(list(stop_tokens(serving.model)), ensure_ascii=False),
    }
    return (
        f'name: "{MODEL_NAME}"\n'
        'backend: "python"\n'
        "max_batch_size: 0\n"
        f"model_transaction_policy {{\n  decoupled: {'true' if serving.streaming else 'false'}\n}}\n"
        "instance_group [\n  {\n    count: 1\n    kind: KIND_CPU\n  }\n]\n"
        + contract.io_block("input", contract.INPUTS)
        + contract.io_block("output", contract.OUTPUTS)
        + "".join(
            f'parameters: {{\n  key: "{key}"\n  value: {{ string_value: {json.dumps(value, ensure_ascii=False)} }}\n}}\n'
            for key, value in parameters.items()
        )
    )


def render_repository(
    serving: ServingSettings, destination: Path, *, compiled_dir: Path, tokenizer_dir: Path
) -> list[str]:
    """Write ``destination`` (which must not exist): ``neuron_llm/config.pbtxt`` and ``neuron_llm/1/model.py``."""
    if serving.backend != "neuron":
        raise RenderError([f"serving.backend {serving.backend}: the Neuron repository serves neuron only"])
    if destination.exists():
        raise RenderError([f"{destination} already exists; render into a new directory"])
    config = render_config(serving, compiled_dir=compiled_dir, tokenizer_dir=tokenizer_dir)
    code = (resources.files(_PACKAGE) / CODE_FILE).read_text(encoding="utf-8")
    destination.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    try:
        model_dir = staging / MODEL_NAME
        (model_dir / VERSION_DIR).mkdir(parents=True)
        (model_dir / "config.pbtxt").write_text(config, encoding="utf-8")
        (model_dir / VERSION_DIR / CODE_FILE).write_text(code, encoding="utf-8")
        server = {"model": str(compiled_dir), "tokenizer": str(tokenizer_dir), "max_input_len": serving.max_input_len,
                  "max_seq_len": serving.max_seq_len}  # fmt: skip
        (model_dir / VERSION_DIR / SERVER_FILE).write_text(yaml.safe_dump(server, sort_keys=False), encoding="utf-8")
        render_server_file(serving, model_dir, runtime=MODEL_NAME, runtime_label=RUNTIME_LABEL)
        staging.rename(destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [MODEL_NAME]
