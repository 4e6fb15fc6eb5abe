"""What a Neuron pod runs: Triton with the one ``neuron_llm`` model and the OpenAI server in front of it, under
the drain supervisor (inference_image/drain.py), exactly as a GPU pod does (inference_image/llmapi/launch.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inference_platform.inference_image.drain import Child
from inference_platform.inference_image.llmapi.launch import openai_argv
from inference_platform.inference_image.neuron.repository import MODEL_NAME
from inference_platform.settings.serving import ServingSettings


def neuron_children(
    serving: ServingSettings, options: Any, *, server_argv: list[str], repository: Path, tokenizer_dir: Path
) -> list[Child]:
    front_end = [
        *openai_argv(
            serving,
            repository,
            tokenizer_dir,
            http_port=options.listen.http_port,
            metrics_port=options.listen.metrics_port,
            address=options.listen.address,
            port=options.openai_port,
        ),
        # The same server, fronting neuron_llm (argparse keeps the last --model-dir).
        f"--model-dir={repository / MODEL_NAME}",
        f"--triton-model={MODEL_NAME}",
    ]
    return [Child("tritonserver", server_argv, drain_first=True), Child("openai", front_end, drain_first=True)]
