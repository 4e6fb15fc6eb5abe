"""The objects the lane returns parse with the official client's own models (openai 3.60: types/file_object.py,
batch.py, batch_request_counts.py, batch_usage.py), so the client's calls read every field we set."""

from __future__ import annotations

from openai.types import Batch, FileObject

from inference_platform.batch import objects


def test_a_file_object_is_the_clients_file_object():
    meta = objects.file_object(
        file_id="file-1", filename="in.jsonl", size=10, created_at=1, purpose="batch", expires_at=2
    )
    parsed = FileObject.model_validate(meta)
    assert (parsed.id, parsed.purpose, parsed.bytes, parsed.expires_at) == ("file-1", "batch", 10, 2)


def test_a_batch_object_in_every_status_is_the_clients_batch():
    batch = objects.batch_object(batch_id="batch_1", endpoint="/v1/chat/completions", input_file_id="file-1",
                                 completion_window="24h", created_at=1, expires_at=86401, metadata={"k": "v"})  # fmt: skip
    for status in objects.STATUSES:
        assert Batch.model_validate({**batch, "status": status}).status == status
    usage = objects.usage_of(
        [
            {
                "response": {
                    "status_code": 200,
                    "body": {
                        "usage": {
                            "prompt_tokens": 3,
                            "completion_tokens": 4,
                            "prompt_tokens_details": {"cached_tokens": 1},
                        }
                    },
                }
            }
        ]
    )
    parsed = Batch.model_validate({**batch, "status": "completed", "usage": usage})
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens, parsed.usage.input_tokens_details.cached_tokens) == (
        3,
        4,
        1,
    )


def test_output_and_error_lines_and_their_file():
    ok = objects.response_line(batch_id="batch_1", line=0, custom_id="a", status_code=200, request_id_="r", body={})
    bad = objects.response_line(batch_id="batch_1", line=1, custom_id="b", status_code=400, request_id_="r", body={})
    none = objects.error_line(batch_id="batch_1", line=2, custom_id="c", code="batch_expired", message="late")
    assert [objects.is_success(x) for x in (ok, bad, none)] == [True, False, False]
    assert ok["id"] == objects.request_id("batch_1", 0) != objects.request_id("batch_1", 1)
    assert set(ok) == set(none) == {"id", "custom_id", "response", "error"}
    assert objects.output_file_id("batch_abc", "output") == "file-abc-output"
