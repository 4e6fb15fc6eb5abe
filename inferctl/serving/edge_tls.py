"""The local edge's certificate authority and server certificate (127.0.0.1, localhost).

Clients trust ``ca.pem`` (``--ca-file``, ``SSL_CERT_FILE``, ``httpx.Client(verify=...)``: docs/serve-local.md).
Trusting a file once must last: :func:`local_certificates` keeps the CA in its folder across restarts and
re-issues only what expired, so a client configured yesterday still connects today. Because a user may put
the CA into a trust store, it can vouch for nothing but this machine: its name constraints permit only
``localhost`` and ``127.0.0.1`` (RFC 5280 4.2.1.10, enforced by OpenSSL), and it signs no intermediate CA
(path length 0). The private keys are written mode 0600. Nothing here is used in AWS, where ACM issues the
load balancer's certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CA_VALID_DAYS = 365
SERVER_VALID_DAYS = 30
RENEW_BEFORE = datetime.timedelta(days=1)
"""A certificate closer than this to its end is replaced at start, so a running edge never serves an expired one."""
LOCAL_NAMES = ("localhost",)
LOCAL_ADDRESSES = ("127.0.0.1",)
CA_NAME = "inferctl local edge CA"


@dataclass(frozen=True)
class LocalCertificates:
    ca: Path
    certificate: Path
    private_key: Path
    ca_created: bool = True
    """True when this start made a new CA (clients must trust the new file); False when it kept the one there."""


def local_certificates(directory: Path, *, now: datetime.datetime | None = None) -> LocalCertificates:
    """The CA and server certificate in ``directory``: kept when still valid (and the CA still constrained to
    this machine), the server certificate re-issued by the kept CA when it expires soon, everything new
    otherwise."""
    directory.mkdir(parents=True, exist_ok=True)
    out = _paths(directory)
    ca_key_path = directory / "ca.key"
    now = now or datetime.datetime.now(datetime.UTC)
    ca = _load_ca(out.ca, ca_key_path, now)
    created = ca is None
    if ca is None:
        ca = _new_ca(now)
        _write_private(ca_key_path, _private_bytes(ca[1]))
        out.ca.write_bytes(_pem(ca[0]))
    if created or not _server_still_good(out, ca[0], now):
        key, certificate = _new_server_certificate(ca, now)
        _write_private(out.private_key, _private_bytes(key))
        out.certificate.write_bytes(_pem(certificate))
    return LocalCertificates(out.ca, out.certificate, out.private_key, ca_created=created)


def write_local_certificates(directory: Path) -> LocalCertificates:
    """A new CA and server certificate in ``directory``, whatever was there."""
    for name in ("ca.pem", "ca.key"):
        (directory / name).unlink(missing_ok=True)
    return local_certificates(directory)


def _paths(directory: Path) -> LocalCertificates:
    return LocalCertificates(
        ca=directory / "ca.pem", certificate=directory / "server.pem", private_key=directory / "server.key"
    )


def _load_ca(ca_path: Path, key_path: Path, now: datetime.datetime) -> tuple[Any, Any] | None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        ca = x509.load_pem_x509_certificate(ca_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        constraints = ca.extensions.get_extension_for_class(x509.NameConstraints).value
    except (OSError, ValueError, x509.ExtensionNotFound):
        return None
    if ca.public_key() != key.public_key() or ca.not_valid_after_utc - now < RENEW_BEFORE:
        return None
    if set(constraints.permitted_subtrees or ()) != set(_permitted()):
        return None
    return ca, key


def _server_still_good(paths: LocalCertificates, ca: Any, now: datetime.datetime) -> bool:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization

    try:
        certificate = x509.load_pem_x509_certificate(paths.certificate.read_bytes())
        key = serialization.load_pem_private_key(paths.private_key.read_bytes(), password=None)
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        certificate.verify_directly_issued_by(ca)
    except (OSError, ValueError, TypeError, x509.ExtensionNotFound, InvalidSignature):
        return False
    return (
        certificate.public_key() == key.public_key()
        and certificate.not_valid_after_utc - now >= RENEW_BEFORE
        and set(names) == set(_names())
    )


def _names() -> list[Any]:
    from cryptography import x509

    return [x509.DNSName(n) for n in LOCAL_NAMES] + [x509.IPAddress(ipaddress.ip_address(a)) for a in LOCAL_ADDRESSES]


def _permitted() -> list[Any]:
    from cryptography import x509

    return [x509.DNSName(n) for n in LOCAL_NAMES] + [x509.IPAddress(ipaddress.ip_network(a)) for a in LOCAL_ADDRESSES]


def _new_ca(now: datetime.datetime) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME)])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        # Only this machine's names: a trusted copy of this CA cannot vouch for any other host.
        .add_extension(x509.NameConstraints(permitted_subtrees=_permitted(), excluded_subtrees=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return certificate, key


def _new_server_certificate(ca: tuple[Any, Any], now: datetime.datetime) -> tuple[Any, Any]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_certificate, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LOCAL_NAMES[0])]))
        .issuer_name(ca_certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(min(now + datetime.timedelta(days=SERVER_VALID_DAYS), ca_certificate.not_valid_after_utc))
        .add_extension(x509.SubjectAlternativeName(_names()), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return key, certificate


def _pem(certificate: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return certificate.public_bytes(serialization.Encoding.PEM)


def _private_bytes(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an existing file keeps its mode under O_CREAT
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
