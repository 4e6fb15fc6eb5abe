"""The LLM step on AWS Neuron: NxD Inference driven token by token, requests batched.

NxD Inference compiles a model for a fixed batch size. ``BatchScheduler`` gathers waiting requests
into batches of at most that size and runs one batch at a time; each row streams its own tokens,
stops on its own rules (``SequenceState``) and finishes as soon as it is done, while the batch runs
until its last row is done (static batching: Neuron's continuous batching lives in its vLLM
integration, not in this Triton path). Sampling runs on the device with per-row top-k/top-p/
temperature (``sampling_params``). The decode loop follows NxD Inference's Hugging Face adapter
(``utils/hf_adapter.py``: right padding, positions from the attention mask).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from inference_platform.inference_image.runtime.generation import Chunk, FinishReason, SequenceState
from inference_platform.inference_image.runtime.llm_request import LlmRequest, SamplingParams

DEFAULT_GLOBAL_TOP_K = 256
"""NxD Inference's on-device sampler keeps this many candidates before per-request top-k/top-p."""


@dataclass
class Job:
    """One request in flight: its state and how to answer it."""

    state: SequenceState
    emit: Callable[[Chunk], None]
    fail: Callable[[str], None]
    """Answer with an error (closing the request)."""
    cancelled: Callable[[], bool] = lambda: False
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def request(self) -> LlmRequest:
        return self.state.request

    def push(self, token: int) -> None:
        if self.state.done:
            return
        if self.cancelled():
            self.finish(FinishReason.CANCELLED)
            return
        chunk = self.state.push(token)
        if chunk is not None:
            self.emit(chunk)
        if self.state.done:
            self.done.set()

    def finish(self, reason: FinishReason) -> None:
        if not self.state.done:
            self.emit(self.state.finish(reason))
        self.done.set()


def neuron_refusal(request: LlmRequest) -> str | None:
    """What the Neuron path (on-device sampling, no logits on the host) cannot honour, or None."""
    if request.beam_width > 1:
        return "beam search is not available on Neuron"
    if request.return_log_probs or request.return_context_logits or request.return_generation_logits:
        return "log probabilities and logits are not returned on Neuron (on-device sampling)"
    if request.bad_words or any(request.embedding_bias):
        return "bad_words and embedding_bias need host-side logits, which the Neuron path does not expose"
    if request.guide_type is not None:
        return "guided decoding is not available on Neuron"
    return None


def sampling_row(params: SamplingParams, global_top_k: int = DEFAULT_GLOBAL_TOP_K) -> tuple[int, float, float]:
    """(top_k, top_p, temperature) for NxD Inference's sampler from TensorRT-LLM-style values."""
    if params.greedy:
        return 1, 1.0, 1.0
    top_k = global_top_k if params.top_k <= 0 else min(params.top_k, global_top_k)
    top_p = 1.0 if params.top_p <= 0 else min(params.top_p, 1.0)
    return top_k, top_p, params.temperature


class BatchScheduler:
    """Feeds ``run_batch`` batches of up to ``batch_size`` jobs from a queue, on one thread."""

    def __init__(
        self,
        run_batch: Callable[[list[Job]], None],
        batch_size: int,
        on_load: Callable[[int, int], None] | None = None,
    ) -> None:
        self._run_batch = run_batch
        self._batch_size = batch_size
        # (waiting, active) after every change: the request gauges the autoscaler reads.
        self._on_load = on_load
        self._counts = threading.Lock()
        self._waiting = 0
        self._active = 0
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="neuron-batches", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        self._load(waiting=+1)
        self._queue.put(job)

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self._batch_size:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    self._queue.put(None)
                    break
                batch.append(job)
            self._load(waiting=-len(batch), active=len(batch))
            try:
                self._run_batch(batch)
            except Exception as err:  # one failed batch must not stall the jobs behind it
                for job in batch:
                    if not job.done.is_set():
                        job.state.finish_reason = FinishReason.STOPPED
                        job.fail(f"Neuron generation failed: {type(err).__name__}: {err}")
                        job.done.set()
            for job in batch:
                job.finish(FinishReason.LENGTH)
            self._load(active=-len(batch))

    def _load(self, *, waiting: int = 0, active: int = 0) -> None:
        with self._counts:
            self._waiting += waiting
            self._active += active
            counts = (self._waiting, self._active)
        if self._on_load is not None:
            with contextlib.suppress(Exception):  # a metrics failure must never stop the batches
                self._on_load(*counts)


class NeuronEngine:
    """A compiled NxD Inference model loaded onto this pod's NeuronCores."""

    def __init__(self, compiled_dir: Path, *, architecture: str, batch_size: int) -> None:
        from inference_platform.inference_image.builders.neuron import model_class

        self.batch_size = batch_size
        self.model = model_class(architecture)(str(compiled_dir))
        self.model.load(str(compiled_dir))
        config = self.model.config.neuron_config.on_device_sampling_config
        self.global_top_k = getattr(config, "global_topk", DEFAULT_GLOBAL_TOP_K)

    def run(self, jobs: list[Job]) -> None:
        import torch

        rows = [list(job.request.input_ids) for job in jobs]
        rows += [rows[0]] * (self.batch_size - len(rows))  # the compiled batch size is fixed
        width = max(len(r) for r in rows)
        pad = jobs[0].request.pad_id or 0
        input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], dtype=torch.int64)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], dtype=torch.int64)
        positions = mask.cumsum(-1) - 1
        positions.masked_fill_(mask == 0, 1)
        sampling = [sampling_row(job.request.sampling, self.global_top_k) for job in jobs]
        sampling += [sampling[0]] * (self.batch_size - len(sampling))
        sampling_params = torch.tensor(sampling, dtype=torch.float32)
        self.model.reset()
        outputs = self.model(
            input_ids=input_ids, attention_mask=mask, position_ids=positions, sampling_params=sampling_params
        )
        positions = torch.amax(positions, 1, keepdim=True)
        while True:
            tokens = outputs.tokens.reshape(-1)
            for job, token in zip(jobs, tokens.tolist(), strict=False):
                job.push(int(token))
            if all(job.state.done for job in jobs):
                return
            positions = positions + 1
            mask = torch.cat([mask.new_ones((mask.shape[0], 1)), mask], dim=-1)
            outputs = self.model(
                input_ids=tokens[:, None].to(torch.int64),
                attention_mask=mask,
                position_ids=positions,
                sampling_params=sampling_params,
            )
