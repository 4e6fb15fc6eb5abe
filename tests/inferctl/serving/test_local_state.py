"""What serve-local keeps across restarts within one work dir (issue 28: keys and CA changed at every restart), and
what it refuses: the CA and server certificate (kept, re-issued near their end, the CA constrained to this machine),
the clients' keys (kept, new for new clients, dropped for removed ones), and the work dir itself (never one holding
other files, never two serve-locals at once)."""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import json
import os
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from inference_platform.errors import CommandError
from inference_platform.inferctl.serving import edge_tls
from inference_platform.inferctl.serving.local_edge import KEY_LENGTH, local_keys
from inference_platform.inferctl.serving.local_work_dir import MARKER, claimed
from inference_platform.settings import stack_files
from tests.runtime_imports import REPO


@pytest.fixture(scope="module")
def policy():
    return stack_files.load("dev").edge.policy(max_input_tokens=1024)


def _load(path):
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_the_ca_and_certificate_are_kept_across_starts(tmp_path):
    first = edge_tls.local_certificates(tmp_path)
    ca, server, key = first.ca.read_bytes(), first.certificate.read_bytes(), first.private_key.read_bytes()
    again = edge_tls.local_certificates(tmp_path)
    assert first.ca_created and not again.ca_created
    assert (again.ca.read_bytes(), again.certificate.read_bytes(), again.private_key.read_bytes()) == (ca, server, key)
    for private in (tmp_path / "ca.key", first.private_key):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600


def test_a_certificate_near_its_end_is_reissued_by_the_kept_ca(tmp_path):
    first = edge_tls.local_certificates(tmp_path)
    ca, server = first.ca.read_bytes(), first.certificate.read_bytes()
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=edge_tls.SERVER_VALID_DAYS)
    again = edge_tls.local_certificates(tmp_path, now=later)
    assert not again.ca_created and again.ca.read_bytes() == ca and again.certificate.read_bytes() != server
    _load(again.certificate).verify_directly_issued_by(_load(again.ca))


def test_a_damaged_or_foreign_ca_is_replaced(tmp_path):
    before = edge_tls.local_certificates(tmp_path).ca.read_bytes()
    (tmp_path / "ca.key").write_text("not a key")
    again = edge_tls.local_certificates(tmp_path)
    assert again.ca_created and again.ca.read_bytes() != before
    _load(again.certificate).verify_directly_issued_by(_load(again.ca))


def test_a_server_certificate_another_local_ca_signed_is_reissued(tmp_path):
    # Same issuer name, another key: verify_directly_issued_by raises cryptography's InvalidSignature, which
    # the check must catch (it lives in cryptography.exceptions, not in x509).
    mine, theirs = edge_tls.local_certificates(tmp_path / "mine"), edge_tls.local_certificates(tmp_path / "theirs")
    assert _load(mine.ca).subject == _load(theirs.ca).subject
    for name in ("server.pem", "server.key"):
        (tmp_path / "mine" / name).write_bytes((tmp_path / "theirs" / name).read_bytes())
    again = edge_tls.local_certificates(tmp_path / "mine")
    assert not again.ca_created and again.certificate.read_bytes() != theirs.certificate.read_bytes()
    _load(again.certificate).verify_directly_issued_by(_load(again.ca))


def _verify(ca: x509.Certificate, leaf: x509.Certificate, name: x509.general_name.GeneralName) -> None:
    verifier = PolicyBuilder().store(Store([ca])).time(datetime.datetime.now(datetime.UTC))
    subject = x509.DNSName(name.value) if isinstance(name, x509.DNSName) else x509.IPAddress(name.value)
    verifier.build_server_verifier(subject).verify(leaf, [])


def test_the_ca_vouches_for_this_machine_only(tmp_path):
    """Users put the CA in their trust store (SSL_CERT_FILE): even with its key, it must not vouch for another host.
    Checked with cryptography's RFC 5280 path validation (name constraints)."""
    certificates = edge_tls.local_certificates(tmp_path)
    ca = _load(certificates.ca)
    leaf = _load(certificates.certificate)
    for name in (x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))):
        _verify(ca, leaf, name)
    ca_key = serialization.load_pem_private_key((tmp_path / "ca.key").read_bytes(), password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    forged = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "api.openai.com")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("api.openai.com")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    with pytest.raises(VerificationError):
        _verify(ca, forged, x509.DNSName("api.openai.com"))


def test_keys_are_kept_new_clients_get_one_and_removed_clients_go(tmp_path, policy):
    path = tmp_path / "api-keys.json"
    keys, new = local_keys(path, policy)
    assert new == sorted(keys) and all(len(k) == KEY_LENGTH for k in keys.values())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again, new = local_keys(path, policy)
    assert (again, new) == (keys, [])
    first = sorted(keys)[0]
    bigger = dataclasses.replace(
        policy, clients=(*policy.clients, dataclasses.replace(policy.clients[0], client_id="newcomer"))
    )
    path.write_text(json.dumps({**keys, "gone": "x" * KEY_LENGTH, first: keys[first]}))
    grown, new = local_keys(path, bigger)
    assert new == ["newcomer"] and grown[first] == keys[first] and "gone" not in grown
    assert json.loads(path.read_text()) == grown


def test_a_malformed_key_is_replaced_and_a_foreign_file_refused(tmp_path, policy):
    path = tmp_path / "api-keys.json"
    keys, _ = local_keys(path, policy)
    client = sorted(keys)[0]
    path.write_text(json.dumps({**keys, client: "short"}))
    fixed, new = local_keys(path, policy)
    assert new == [client] and len(fixed[client]) == KEY_LENGTH
    path.write_text("a plain key, not serve-local's JSON\n")
    with pytest.raises(CommandError) as err:
        local_keys(path, policy)
    assert err.value.exit_code == 2 and "not serve-local's JSON" in str(err.value)
    assert path.read_text() == "a plain key, not serve-local's JSON\n"  # never overwritten


def test_the_work_dir_keeps_keys_and_ca_and_renders_the_rest_anew(tmp_path):
    root = tmp_path / "work"
    with claimed(root) as work:
        work.model.mkdir()
        (work.model / "old").write_text("x")
        work.edge.mkdir()
        work.key_file.write_text("{}")
    with claimed(root) as work:
        assert not work.model.exists() and work.edge.is_dir() and work.key_file.is_file()
        assert (root / MARKER).read_text().strip() == str(os.getpid())


def test_a_folder_with_other_files_or_in_use_is_refused(tmp_path):
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(CommandError) as err, claimed(foreign):
        pass
    assert err.value.exit_code == 2 and "holds files serve-local did not write" in str(err.value)
    assert (foreign / "notes.txt").read_text() == "mine"
    with claimed(tmp_path / "work"), pytest.raises(CommandError) as busy, claimed(tmp_path / "work"):
        pass
    assert busy.value.exit_code == 2 and "in use by another serve-local" in str(busy.value)


def test_batch_needs_the_edge_and_its_keys(tmp_path):
    """The Batch API keeps each client's objects under the client id the edge sets after checking a key: without
    the edge, or with the stack's edge.auth off, every call would be a 401, so serve-local refuses up front."""
    import subprocess
    import sys

    import yaml

    inferctl = [sys.executable, "-m", "inference_platform.inferctl", "serve-local", f"--work-dir={tmp_path / 'w'}"]
    result = subprocess.run([*inferctl, "--batch"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "--batch needs --edge" in result.stderr, result.stderr
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.dev.yaml").read_text())
    doc["config"]["inference-platform:edge"] = {"auth": {"enabled": False}}
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump(doc))
    result = subprocess.run([*inferctl, "--edge", "--batch", f"--stack-file={stack_file}"], capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 2 and "--batch: edge.auth.enabled is false" in result.stderr, result.stderr
    assert not (tmp_path / "w").exists()


def test_the_banner_says_what_a_client_needs(policy, tmp_path):
    from types import SimpleNamespace

    from inference_platform.inferctl.serving.serve_local import EdgePlan, banner

    settings = stack_files.load("dev")
    ca = edge_tls.local_certificates(tmp_path / "tls")
    keys = {"default": "k" * KEY_LENGTH}
    plan = EdgePlan(policy=policy, keys=keys, key_file=tmp_path / "keys.json", work_dir=tmp_path, new_keys=[],
                    triton_key=None, triton_header="x-api-key")  # fmt: skip
    lane = SimpleNamespace(moto_url="http://127.0.0.1:5000")
    text = banner(settings, base_url="https://127.0.0.1:8443/v1", edge=plan, ca=ca, lane=lane)
    assert "base URL   https://127.0.0.1:8443/v1" in text and f"model      {settings.serving.served_model_name}" in text
    assert f"API keys   {tmp_path / 'keys.json'} (clients default: kept from the last start;" in text
    assert f"CA         {ca.ca} (new: clients trust this file)" in text
    assert "batch      https://127.0.0.1:8443/v1/files and https://127.0.0.1:8443/v1/batches" in text
    assert "k" * KEY_LENGTH not in text  # the key file is named, never a key
    open_edge = dataclasses.replace(plan, keys={})
    text = banner(settings, base_url="https://127.0.0.1:8443/v1", edge=open_edge, ca=ca)
    assert "API key    none (edge.auth.enabled is false" in text
    plain = banner(settings, base_url="http://127.0.0.1:9000/v1", edge=None)
    assert "base URL   http://127.0.0.1:9000/v1" in plain and "API key    none (no edge" in plain
