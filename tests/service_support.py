"""Helpers for tests of the Referee service: an in-process server on a real port with a client
channel (``with_server``), a test token, and certificates made for the test (``make_pki``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import ipaddress
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from referee.service.client import ClientTls, referee_channel
from referee.service.server import start_server
from referee.service.settings import ServiceSettings

TOKEN = "test-token-" + "k3Jx9Qv2" * 4  # what the servers of these tests require
T = TypeVar("T")


@contextlib.asynccontextmanager
async def served(records: Path, settings: ServiceSettings | None = None) -> AsyncIterator[str]:
    """An in-process server started with ``settings`` (on a free loopback port unless they name a
    unix socket), its records in ``records``; yields the address to connect to."""
    settings = settings or ServiceSettings()
    if not settings.listen.startswith("unix:"):
        settings = dataclasses.replace(settings, listen="127.0.0.1:0")
    server, port = await start_server(settings, records)
    try:
        yield settings.listen if settings.listen.startswith("unix:") else f"127.0.0.1:{port}"
    finally:
        await server.stop(grace=None)


async def with_server(records: Path, body: Callable[[grpc.aio.Channel], Awaitable[T]],
                      settings: ServiceSettings | None = None, *, token: str | None = None,
                      tls: ClientTls | None = None, timeout_s: float = 90) -> T:
    """Run ``body`` with a channel to a server ``served`` with ``settings``; the channel sends
    ``token`` (by default the server's own; "" for none) and uses ``tls`` when given."""
    settings = settings or ServiceSettings()
    token = settings.token if token is None else token or None
    async with served(records, settings) as address, referee_channel(address, token=token, tls=tls) as channel:
        async with asyncio.timeout(timeout_s):
            return await body(channel)


@dataclasses.dataclass(frozen=True)
class Pki:
    """PEM files made for one test: a CA, a server certificate it signed (for 127.0.0.1 and
    localhost), a client certificate it signed, and a client certificate of another CA."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    stranger_cert: Path
    stranger_key: Path


def make_pki(folder: Path) -> Pki:
    """Make a fresh CA and certificates under ``folder`` (keys: P-256; valid for a day)."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: str, issuer_key: ec.EllipticCurvePrivateKey,
                    *, ca: bool = False, server: bool = False) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
                decipher_only=False), critical=True)
        else:
            usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
            builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    def write(stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey | None = None) -> tuple[Path, Path]:
        cert_path, key_path = folder / f"{stem}.pem", folder / f"{stem}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        if key is not None:
            key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
        return cert_path, key_path

    keys = {role: ec.generate_private_key(ec.SECP256R1()) for role in ("ca", "server", "client", "other", "stranger")}
    ca_path, _ = write("ca", certificate("test CA", keys["ca"], "test CA", keys["ca"], ca=True))
    server = write("server", certificate("localhost", keys["server"], "test CA", keys["ca"], server=True),
                   keys["server"])
    client = write("client", certificate("client", keys["client"], "test CA", keys["ca"]), keys["client"])
    # a client certificate signed by a CA the server does not know
    stranger = write("stranger", certificate("stranger", keys["stranger"], "other CA", keys["other"]),
                     keys["stranger"])
    return Pki(ca_path, *server, *client, *stranger)
