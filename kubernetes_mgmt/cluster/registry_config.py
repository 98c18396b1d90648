"""The install script's registry and apt-key keys, from the request's
private registries and the site's options.

PEM material and the Authorization header travel base64-encoded
(``registry=<base64>`` items): a value of the script's KEY=VALUE lines is
one line, and base64 has no ',' to split on. The script writes each
registry's ``certs.d`` directory from them.
"""
from __future__ import annotations

import base64

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.params.cluster_params import ClusterParams
from kubernetes_mgmt.params.registries import (
    RegistryParams,
    normalized_fingerprint,
)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _items(registries: tuple[RegistryParams, ...], attribute: str
           ) -> str | None:
    items = [f'{r.registry}={_b64(getattr(r, attribute))}'
             for r in registries if getattr(r, attribute)]
    return ','.join(items) or None


def _mirrors(registries: tuple[RegistryParams, ...]) -> str | None:
    """The site's registry_mirrors, except for registries the request
    configures itself, then the request's mirrors in their order."""
    own = {r.registry for r in registries}
    items = [m for m in CONF.kubernetes_mgmt.registry_mirrors
             if m.split('=', 1)[0] not in own]
    items += [f'{r.registry}={url}' for r in registries for url in r.mirrors]
    return ','.join(items) or None


def registry_keys(params: ClusterParams) -> dict[str, str | None]:
    """The prepare role's registry keys."""
    registries = params.registries
    auth = [f'{r.registry}={_b64(r.authorization)}' for r in registries
            if r.authorization]
    skip = [r.registry for r in registries if r.skip_verify]
    return {
        'REGISTRY_MIRRORS': _mirrors(registries),
        'REGISTRY_CA': _items(registries, 'ca_cert'),
        'REGISTRY_CLIENT_CERT': _items(registries, 'client_cert'),
        'REGISTRY_CLIENT_KEY': _items(registries, 'client_key'),
        'REGISTRY_AUTH': ','.join(auth) or None,
        'REGISTRY_SKIP_VERIFY': ','.join(skip) or None,
    }


def apt_key_fingerprints(params: ClusterParams) -> str:
    """The fingerprints the Kubernetes apt key must have: the request's,
    else the site's option."""
    prints = params.apt_key_fingerprints or tuple(
        normalized_fingerprint(f)
        for f in CONF.kubernetes_mgmt.apt_key_fingerprints)
    return ','.join(prints)


def skip_verify_registries(params: ClusterParams) -> list[str]:
    """Registries whose TLS certificates are not verified."""
    return [r.registry for r in params.registries if r.skip_verify]
