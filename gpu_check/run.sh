#!/usr/bin/env bash
# GPU check (issue 20): the pinned runtime (this repository's image on the pinned Triton + TensorRT-LLM tag) serving
# a small model on ONE NVIDIA GPU, through the production path (artifacts published with a SHA-256 manifest to an
# S3 endpoint, downloaded and verified by the image's entrypoint), then the OpenAI checks of checks.py with the
# official openai client. Compare the PASS lines with expected_output.txt beside this script.
#
# Not part of `make test` (no GPU there). Needs: Linux, docker with the NVIDIA container toolkit (`docker run
# --gpus 1`), one GPU with >= 8 GB, python3 (>= 3.10, venv), network to nvcr.io, PyPI and huggingface.co.
# Time: ~14 GB base image pull + build (first run), ~1 GB model, ~1-2 min load: under 10 minutes on a cloud GPU
# host with a warm Docker cache; the timings are printed.
#
#   bash gpu_check/run.sh            # GPU_CHECK_MODEL=<hf id> and GPU_CHECK_WORK=<dir> optional
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
work=${GPU_CHECK_WORK:-$(mktemp -d -t gpu-check.XXXXXX)}
model_id=${GPU_CHECK_MODEL:-Qwen/Qwen2.5-0.5B-Instruct}
# The OpenAI model id is serving.model exactly (the server's one rule).
served=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["model"])' "$here/serving.json")
bucket=gpu-check
prefix=models/gpu-check/v1
openai_port=9000
started=$(date +%s)
step() { printf '[%4ss] %s\n' "$(( $(date +%s) - started ))" "$*"; }

for tool in docker nvidia-smi python3 curl; do
  command -v "$tool" >/dev/null || { echo "gpu-check: $tool is not on PATH" >&2; exit 2; }
done
step "GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1)"

step "host tools (venv: this package without its Pulumi side, the S3 emulator, the openai client)"
python3 -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip install --quiet)
"${pip[@]}" --upgrade "pip>=24,<27"
"${pip[@]}" --no-deps "$repo"
"${pip[@]}" -r "$repo/inference_image/requirements-image.txt" \
  "moto[server,s3]>=5.1,<6" "openai>=3.60,<4" "jsonschema>=4.20,<5" "huggingface_hub>=0.34,<2"
py="$work/venv/bin/python"

# The tag is the one pin (inference_image/llmapi/release.py), never repeated here.
tag=$("$py" -c 'from inference_platform.inference_image.llmapi.release import TRITON_TAG; print(TRITON_TAG)')
image="inference-gpu-check:$tag"
step "docker build on nvcr.io/nvidia/tritonserver:$tag"
docker build --quiet -f "$repo/inference_image/Dockerfile" --build-arg "TRITON_TAG=$tag" -t "$image" "$repo" >/dev/null

step "model $model_id"
"$py" -c 'import sys; from huggingface_hub import snapshot_download; snapshot_download(sys.argv[1], local_dir=sys.argv[2])' \
  "$model_id" "$work/model" >/dev/null

s3_port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export AWS_ACCESS_KEY_ID=gpu-check AWS_SECRET_ACCESS_KEY=gpu-check AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$s3_port"
"$work/venv/bin/moto_server" -H 127.0.0.1 -p "$s3_port" >"$work/s3.log" 2>&1 &
s3_pid=$!
container=gpu-check-$$
cleanup() {
  docker logs "$container" >"$work/server.log" 2>&1 || true
  docker rm -f "$container" >/dev/null 2>&1 || true
  kill "$s3_pid" 2>/dev/null || true
  echo "gpu-check: logs in $work"
}
trap cleanup EXIT
for _ in $(seq 1 50); do curl -fsS "$AWS_ENDPOINT_URL" >/dev/null 2>&1 && break; sleep 0.2; done
"$py" -c 'import boto3, sys; boto3.client("s3").create_bucket(Bucket=sys.argv[1])' "$bucket"

step "publish s3://$bucket/$prefix/ (SHA-256 manifest; the entrypoint verifies every file again)"
"$py" -m inference_platform.inferctl artifacts upload "$work/model" "s3://$bucket/$prefix/" --no-progress >/dev/null

step "serve (the image's entrypoint, one GPU, host network: the S3 endpoint is on loopback)"
docker run -d --name "$container" --gpus 1 --network host --shm-size 2g \
  -e AWS_ACCESS_KEY_ID -e AWS_SECRET_ACCESS_KEY -e AWS_REGION -e AWS_DEFAULT_REGION -e AWS_ENDPOINT_URL \
  -v "$here/serving.json:/etc/inference/serving.json:ro" \
  "$image" --settings /etc/inference/serving.json \
  --engine-uri "s3://$bucket/$prefix/" --tokenizer-uri "s3://$bucket/$prefix/" >/dev/null
for _ in $(seq 1 480); do
  if curl -fsS "http://127.0.0.1:$openai_port/health" >/dev/null 2>&1; then break; fi
  if [ "$(docker inspect -f '{{.State.Running}}' "$container")" != true ]; then
    echo "gpu-check: the server exited; see $work/server.log" >&2; exit 1
  fi
  sleep 1
done
step "ready"

"$py" "$here/checks.py" --base-url "http://127.0.0.1:$openai_port/v1" --model "$served" | tee "$work/output.txt"
step "done"
if diff <(grep '^PASS ' "$work/output.txt") "$here/expected_output.txt"; then
  echo "gpu-check: every check passed"
else
  echo "gpu-check: the PASS lines differ from expected_output.txt" >&2
  exit 1
fi
