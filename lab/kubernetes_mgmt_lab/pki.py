"""Certificates for the lab: a real self-signed CA per emulated cluster
(so the CA hash, kubeconfigs and TLS checks are genuine) and leaf
certificates signed by it. Both the emulated cluster (``emulated``) and
the Kubernetes API double (``kube_api``) use it, so it lives below both."""
from __future__ import annotations

import datetime
import hashlib
import ipaddress
import os
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

CA_NAMES = ('ca', 'front-proxy-ca', 'etcd/ca')
YEARS = 10


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _builder(subject: x509.Name, issuer: x509.Name, public_key,
             years: int = YEARS, now: datetime.datetime | None = None
             ) -> x509.CertificateBuilder:
    """Valid for ``years`` from ``now`` (the emulated cluster's clock,
    which a test may move ahead). Valid from the earlier of that and the
    machine's time: real TLS clients check against the machine's clock,
    and must accept a certificate issued "in the future"."""
    real = datetime.datetime.now(datetime.timezone.utc)
    now = now or real
    return (x509.CertificateBuilder().subject_name(subject)
            .issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(min(now, real) - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365 * years)))


def make_ca(cn: str, now: datetime.datetime | None = None
            ) -> tuple[bytes, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (_builder(_name(cn), _name(cn), key.public_key(), now=now)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                           critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_encipherment=True,
                key_cert_sign=True, content_commitment=False,
                data_encipherment=False, key_agreement=False,
                crl_sign=False, encipher_only=False,
                decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return _cert_pem(cert), _key_pem(key)


def _load_ca(ca_cert_pem: bytes, ca_key_pem: bytes):
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    # The CA key is one the lab made: checking its RSA math again on every
    # load costs a join more than everything else it signs.
    ca_key = serialization.load_pem_private_key(
        ca_key_pem, None, unsafe_skip_rsa_key_validation=True)
    return ca_cert, ca_key


def issue(ca_cert_pem: bytes, ca_key_pem: bytes, cn: str,
          org: str | None = None, ips: tuple[str, ...] = (),
          dns: tuple[str, ...] = (),
          now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """A leaf certificate (EC: cheap to make) signed by the CA, valid
    for one year from ``now``, as kubeadm's are."""
    ca_cert, ca_key = _load_ca(ca_cert_pem, ca_key_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(_name(cn, org), ca_cert.subject, key.public_key(),
                       years=1, now=now)
    sans = [x509.DNSName(d) for d in dns]
    sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    if sans:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return _cert_pem(cert), _key_pem(key)


@dataclass(frozen=True)
class Authority:
    """A CA and its key, for a lab server and its clients. Each one made
    has a key of its own, so two are unrelated: a client trusting one
    refuses a server certificate of the other (the wrong-CA cases)."""

    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    @classmethod
    def new(cls, cn: str) -> Authority:
        return cls(*make_ca(cn))

    def issue(self, cn: str, ips: tuple[str, ...] = (),
              dns: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
        """A leaf certificate and key; ``ips``/``dns`` its names (a TLS
        client checks the address it dialled against them)."""
        return issue(self.cert_pem, self.key_pem, cn, ips=ips, dns=dns)


def renew(cert_pem: bytes, ca_cert_pem: bytes, ca_key_pem: bytes,
          now: datetime.datetime | None = None) -> tuple[bytes, bytes]:
    """``cert_pem`` again (same subject and names, a new key), valid for
    one year from ``now``: what ``kubeadm certs renew`` makes."""
    old = x509.load_pem_x509_certificate(cert_pem)
    ca_cert, ca_key = _load_ca(ca_cert_pem, ca_key_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(old.subject, ca_cert.subject, key.public_key(),
                       years=1, now=now)
    try:
        sans = old.extensions.get_extension_for_class(
            x509.SubjectAlternativeName)
        builder = builder.add_extension(sans.value, critical=False)
    except x509.ExtensionNotFound:
        pass
    cert = builder.sign(ca_key, hashes.SHA256())
    return _cert_pem(cert), _key_pem(key)


def not_after(cert_pem: bytes) -> datetime.datetime:
    """When the certificate expires (UTC)."""
    return x509.load_pem_x509_certificate(cert_pem).not_valid_after_utc


def ca_hash(ca_cert_pem: bytes) -> str:
    """kubeadm's discovery hash: SHA-256 of the CA's public key info."""
    cert = x509.load_pem_x509_certificate(ca_cert_pem)
    spki = cert.public_key().public_bytes(
        serialization.Encoding.DER,
        serialization.PublicFormat.SubjectPublicKeyInfo)
    return 'sha256:' + hashlib.sha256(spki).hexdigest()


def make_sa_keys() -> tuple[bytes, bytes]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM,
        serialization.PublicFormat.SubjectPublicKeyInfo)
    return _key_pem(key), pub


def write(path: str, data: bytes, private: bool = False) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                 0o600 if private else 0o644)
    with os.fdopen(fd, 'wb') as f:
        f.write(data)


def read(path: str) -> bytes:
    with open(path, 'rb') as f:
        return f.read()


def create_cluster_pki(directory: str,
                       now: datetime.datetime | None = None) -> None:
    """The shared CAs (what kubeadm-certs carries between masters), valid
    for ten years from ``now``."""
    for name in CA_NAMES:
        cn = {'ca': 'kubernetes', 'etcd/ca': 'etcd-ca'}.get(name, name)
        cert, key = make_ca(cn, now)
        write(os.path.join(directory, f'{name}.crt'), cert)
        write(os.path.join(directory, f'{name}.key'), key, private=True)
    sa_key, sa_pub = make_sa_keys()
    write(os.path.join(directory, 'sa.key'), sa_key, private=True)
    write(os.path.join(directory, 'sa.pub'), sa_pub)
