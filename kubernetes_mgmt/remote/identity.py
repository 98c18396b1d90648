"""The driver's own SSH key pair, one per cluster (VNF instance).

The pair is derived from the site's state key (``integrity``) and the
instance id with HMAC-SHA256 under a label of its own, as the seed of an
Ed25519 key: every tacker-conductor holding the site key derives the same
pair, and the private key is never stored, neither in the VNF instance
nor on disk. It lives in memory for one operation. The public key reaches
the VMs through the VNF's user data (``user_data``), so that the driver
logs in without the VM password.
"""
from __future__ import annotations

import hashlib
import hmac
import io

import paramiko
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from kubernetes_mgmt.state import integrity

_LABEL = b'kubernetes_mgmt ssh login key v1\0'


def login_key(instance_id: str, *, create_site_key: bool = False,
              site_key: bytes | None = None) -> paramiko.PKey:
    """The private login key of the cluster of ``instance_id``.

    ``site_key`` defaults to the state key file; ``create_site_key``
    lets a first instantiate at a new site create that file."""
    key = site_key if site_key is not None else integrity.load_key(
        create=create_site_key)
    seed = hmac.new(key, _LABEL + instance_id.encode(),
                    hashlib.sha256).digest()
    private = ed25519.Ed25519PrivateKey.from_private_bytes(seed)
    pem = private.private_bytes(serialization.Encoding.PEM,
                                serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
    return paramiko.Ed25519Key(file_obj=io.StringIO(pem.decode()))


def public_line(key: paramiko.PKey, instance_id: str) -> str:
    """The ``authorized_keys`` line of ``key`` (its comment names the
    cluster, so that a VM's owner sees whose key it is)."""
    return f'{key.get_name()} {key.get_base64()} ' \
           f'kubernetes-mgmt@{instance_id}'
