"""The Neuron LLM step's request handling, with the NxD Inference model replaced by a scripted batch."""

from __future__ import annotations

import threading

import pytest

from inference_platform.inference_image.runtime.generation import FinishReason, SequenceState
from inference_platform.inference_image.runtime.llm_request import LlmRequest, SamplingParams
from inference_platform.inference_image.runtime.neuron_engine import BatchScheduler, Job, neuron_refusal, sampling_row


def _job(prompt, *, sink, max_new=4, end_id=0, cancelled=lambda: False):
    request = LlmRequest(
        input_ids=tuple(prompt),
        max_new_tokens=max_new,
        end_id=end_id,
        pad_id=0,
        streaming=True,
        exclude_input_in_output=None,
    )
    return Job(
        state=SequenceState(request, exclude_input_default=True),
        emit=lambda chunk: sink.append((prompt[0], chunk.tokens, chunk.final)),
        fail=lambda message: sink.append((prompt[0], message, True)),
        cancelled=cancelled,
    )


def _scripted(steps):
    """A run_batch that feeds each job its script, one token per decode step, like NeuronEngine.run."""
    batches = []

    def run(jobs):
        batches.append([job.request.input_ids[0] for job in jobs])
        for step in range(max(len(steps[job.request.input_ids[0]]) for job in jobs)):
            for job in jobs:
                script = steps[job.request.input_ids[0]]
                if step < len(script):
                    job.push(script[step])
            if all(job.state.done for job in jobs):
                return

    return run, batches


def test_batches_stream_each_row_and_stop_rows_independently():
    sink: list = []
    run, batches = _scripted({1: [5, 0], 2: [6, 7, 8, 9, 9]})
    gate = threading.Event()

    def gated(jobs):
        gate.wait(5)
        run(jobs)

    scheduler = BatchScheduler(gated, batch_size=2)
    jobs = [_job([1], sink=sink), _job([2], sink=sink)]
    for job in jobs:
        scheduler.submit(job)
    gate.set()
    for job in jobs:
        assert job.done.wait(5)
    scheduler.stop()
    assert sink.count((1, (5,), False)) == 1 and (1, (), True) in sink  # end_id closes row 1 early
    assert [s for s in sink if s[0] == 2] == [(2, (6,), False), (2, (7,), False), (2, (8,), False), (2, (9,), True)]
    assert jobs[0].state.finish_reason is FinishReason.END_ID and jobs[1].state.finish_reason is FinishReason.LENGTH
    assert sum(len(b) for b in batches) == 2 and all(len(b) <= 2 for b in batches)


def test_a_failed_batch_answers_every_job_with_an_error_and_the_next_batch_runs():
    sink: list = []
    calls = []

    def run(jobs):
        calls.append(len(jobs))
        if len(calls) == 1:
            raise RuntimeError("device lost")
        for job in jobs:
            job.push(0)

    scheduler = BatchScheduler(run, batch_size=1)
    first, second = _job([1], sink=sink), _job([2], sink=sink)
    scheduler.submit(first)
    assert first.done.wait(5)
    scheduler.submit(second)
    assert second.done.wait(5)
    scheduler.stop()
    assert (1, "Neuron generation failed: RuntimeError: device lost", True) in sink
    assert (2, (), True) in sink


def test_a_cancelled_job_closes_at_its_next_token():
    sink: list = []
    job = _job([1], sink=sink, cancelled=lambda: True)
    job.push(5)
    assert job.state.finish_reason is FinishReason.CANCELLED and sink == [(1, (), True)]


def test_sampling_parameters_map_to_the_on_device_sampler():
    assert sampling_row(SamplingParams(top_k=1)) == (1, 1.0, 1.0)
    assert sampling_row(SamplingParams(temperature=0.0)) == (1, 1.0, 1.0)
    assert sampling_row(SamplingParams(top_k=0, top_p=0.0, temperature=0.7)) == (256, 1.0, 0.7)
    assert sampling_row(SamplingParams(top_k=1000, top_p=0.9), global_top_k=64) == (64, 0.9, 1.0)


@pytest.mark.parametrize(
    "fields",
    [
        {"beam_width": 2},
        {"return_log_probs": True},
        {"bad_words": ((1,),)},
        {"embedding_bias": (1.0,)},
        {"guide_type": "json"},
    ],
)
def test_requests_the_neuron_path_cannot_honour_are_refused(fields):
    base = {
        "input_ids": (1,),
        "max_new_tokens": 2,
        "end_id": 0,
        "pad_id": 0,
        "streaming": False,
        "exclude_input_in_output": None,
    }
    assert neuron_refusal(LlmRequest(**(base | fields)))
    assert neuron_refusal(LlmRequest(**base)) is None


def test_the_scheduler_reports_waiting_and_active_requests_for_the_autoscaler():
    sink: list = []
    loads: list[tuple[int, int]] = []
    gate = threading.Event()

    def gated(jobs):
        gate.wait(5)
        for job in jobs:
            job.push(0)

    scheduler = BatchScheduler(gated, batch_size=2, on_load=lambda waiting, active: loads.append((waiting, active)))
    jobs = [_job([i], sink=sink) for i in (1, 2, 3)]
    for job in jobs:
        scheduler.submit(job)
    gate.set()
    for job in jobs:
        assert job.done.wait(5)
    scheduler.stop()
    assert loads[0] == (1, 0)  # queued before any batch ran
    assert max(active for _, active in loads) <= 2  # never more active than the batch holds
    assert max(waiting for waiting, _ in loads) >= 1 and loads[-1] == (0, 0)  # idle again at the end
