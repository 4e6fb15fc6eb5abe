"""The runtime release the image pins, and where each fact about it was read.

Facts, not code. The newest ``<yy.mm>-trtllm-python-py3`` tag NVIDIA's own repositories establish is
26.07: triton-inference-server/server ``docs/introduction/compatibility.md`` on branch ``r26.08`` (head
6fa22ae0, "docs: add 26.08 rows to the release compatibility matrix (#8935)") lists 26.07 as the newest
row of the trtllm-python-py3 table; that commit added 26.08 rows only to the vLLM and ONNX Runtime
tables. Bumping: re-read that table and ``Dockerfile.triton.trt_llm_backend`` of the new
tensorrtllm_backend branch, then every ``SOURCE_*`` in ``llm_args_schema``.
"""

from __future__ import annotations

from types import MappingProxyType

TRITON_CONTAINER = "26.07"
TRITON_TAG = f"{TRITON_CONTAINER}-trtllm-python-py3"
IMAGE = f"nvcr.io/nvidia/tritonserver:{TRITON_TAG}"
TRITON_SERVER_VERSION = "2.71.0"
TENSORRT_LLM_VERSION = "1.2.1"
PYTHON_VERSION = "3.12"

# Each fact above, with the file it was read from (git show <ref>:<path> of the fetched repositories).
PROVENANCE = MappingProxyType(
    {
        "tag_and_tensorrt_llm": (
            "triton-inference-server/server r26.08 (6fa22ae0) docs/introduction/compatibility.md, "
            "'Container Name: trtllm-python-py3': 26.07 | nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3 | "
            "Python 3.12.3 | torch 2.10.0a0+b4e4ee81d3.nv25.12 | TensorRT 10.14.1.48 | TensorRT-LLM 1.2.1 | "
            "CUDA 13.1.0.036 | driver 590.44.01 | 14.20 GB"
        ),
        "triton_version": (
            "triton-inference-server/server r26.07 (819ee377 = tag v2.71.0) build.py DEFAULT_TRITON_VERSION_MAP: "
            "release_version 2.71.0, triton_container_version 26.07"
        ),
        "backend_branch": (
            "triton-inference-server/tensorrtllm_backend r26.07 (3bc11537) dockerfile/Dockerfile.triton.trt_llm_backend: "
            "TENSORRTLLM_REPO_TAG=release/1.2.1, TENSORRTLLM_VER=1.2.1; submodule tensorrt_llm -> "
            "triton-inference-server/TensorRT-LLM @ ca88df0a400515b8206a19eb30cd047eb7661035 (also on r26.05, r26.06)"
        ),
        "llmapi_flow": (
            "triton-inference-server/tensorrtllm_backend r26.07 README.md 'PyTorch Backend (LLM API)': serve a "
            "Hugging Face model with no engine compilation; 'All keys in model.yaml map directly to LLM() "
            "constructor arguments'; docs/llmapi.md: multi-node runs "
            "'trtllm-llmapi-launch /opt/tritonserver/bin/tritonserver --model-repository ...'"
        ),
        "openai_frontend": (
            "triton-inference-server/server r26.07 python/openai: README 'TensorRT-LLM (Orchestrator Mode)' only, "
            "'Leader Mode: Not currently supported'; engine/utils/triton.py _create_trtllm_generate_request sends "
            "the C++ backend's inputs (stream, max_tokens, stop_words, ...) that the LLM-API model does not "
            'declare (core src/model.cc r26.06: "unexpected inference input"), maps no response_format and '
            "reads usage from num_input_tokens/num_output_tokens outputs"
        ),
    }
)
