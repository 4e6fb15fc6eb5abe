"""Throttling and 5xx are retried by botocore with backoff; what keeps failing, and what is refused
(access, region), ends in one line naming the request and the resource."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_platform.artifacts import ArtifactError, download, upload, verify

from .conftest import METADATA, SMALL_TRANSFER, Store

pytestmark = pytest.mark.motoserver


@pytest.fixture
def published(server_store: Store, make_model) -> Store:
    upload(make_model(), server_store.uri(), METADATA, session=server_store.session, transfer=SMALL_TRANSFER)
    return server_store


def test_throttled_reads_are_retried_until_they_pass(
    published: Store, tmp_path: Path, faults, no_backoff_sleep
) -> None:
    injected = faults(published.session)
    injected.error("GetObject", 503, "SlowDown", times=2, key="manifest.json")
    injected.error("GetObject", 500, "InternalError", times=2, key="rank0.engine")
    download(published.uri(), tmp_path / "m", session=published.session, transfer=SMALL_TRANSFER)
    assert (tmp_path / "m" / ".complete").exists()
    assert len(injected.ops("GetObject", "manifest.json")) == 3
    assert len(no_backoff_sleep) >= 4  # botocore computed a backoff before every retry


def test_throttled_uploads_are_retried_until_they_pass(server_store: Store, make_model, faults) -> None:
    injected = faults(server_store.session)
    injected.error("UploadPart", 503, "SlowDown", times=3)
    injected.error("PutObject", 503, "SlowDown", times=1, key="manifest.json")
    upload(make_model(), server_store.uri(), METADATA, session=server_store.session, transfer=SMALL_TRANSFER)
    assert verify(server_store.uri(), session=server_store.session).ok


def test_persistent_throttling_is_reported_after_the_configured_attempts(
    published: Store, faults, monkeypatch: pytest.MonkeyPatch, no_backoff_sleep
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "4")
    injected = faults(published.session)
    injected.error("HeadObject", 503, "SlowDown", key="config.json")
    with pytest.raises(ArtifactError) as caught:
        verify(published.uri(), session=published.session, transfer=SMALL_TRANSFER)
    assert str(caught.value) == (
        f"S3 kept failing HeadObject on s3://{published.bucket}/{published.key('config.json')} "
        "(HTTP 503) after 4 attempts: try again later or raise AWS_MAX_ATTEMPTS"
    )
    assert len(injected.ops("HeadObject", "config.json")) == 4
    assert len(no_backoff_sleep) == 3


def test_access_denied_names_the_action_and_resource(published: Store, tmp_path: Path, faults) -> None:
    injected = faults(published.session)
    injected.error("GetObject", 403, "AccessDenied", key="manifest.json")
    with pytest.raises(ArtifactError) as caught:
        download(published.uri(), tmp_path / "m", session=published.session)
    assert str(caught.value) == (
        f"access denied: s3:GetObject on arn:aws:s3:::{published.bucket}/{published.key('manifest.json')} "
        "(AccessDenied: injected AccessDenied)"
    )
    assert not (tmp_path / "m").exists()


def test_denied_upload_part_is_reported_and_no_manifest_written(server_store: Store, make_model, faults) -> None:
    injected = faults(server_store.session)
    injected.error("UploadPart", 403, "AccessDenied")
    with pytest.raises(ArtifactError, match=r"access denied: s3:PutObject on arn:aws:s3:::.*/engine/rank0.engine"):
        upload(make_model(), server_store.uri(), METADATA, session=server_store.session, transfer=SMALL_TRANSFER)
    with pytest.raises(ArtifactError, match="no manifest at"):
        verify(server_store.uri(), session=server_store.session)


def test_wrong_region_names_the_bucket_region(published: Store, faults) -> None:
    injected = faults(published.session)
    injected.error(
        "GetObject", 301, "PermanentRedirect", key="manifest.json", headers={"x-amz-bucket-region": "eu-west-1"}
    )
    with pytest.raises(ArtifactError) as caught:
        verify(published.uri(), session=published.session)
    assert str(caught.value) == (
        f"bucket '{published.bucket}' is in region eu-west-1 (PermanentRedirect on GetObject): set AWS_REGION=eu-west-1"
    )
    # botocore's own redirect was tried once (to the same custom endpoint) before giving up.
    assert len(injected.ops("GetObject", "manifest.json")) == 2
