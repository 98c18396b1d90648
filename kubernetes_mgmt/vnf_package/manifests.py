"""Kubernetes manifests of the package, checked against the API schema.

Uses the maintained ``kubernetes-validate`` (its schemas come with the
package, no network needed). It is a test dependency: ``package verify``
checks manifests only where it is installed. ``pv_problems`` checks what
the driver needs of a PersistentVolume manifest named by a request's
``pv_registration_params``, without it.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from kubernetes_mgmt.conf import CONF
from kubernetes_mgmt.storage.pv_manifests import (
    InvalidManifest,
    parse_pv_manifest,
)


def available() -> bool:
    try:
        import kubernetes_validate  # noqa: F401
    except ImportError:
        return False
    return True


def schema_version() -> str:
    """The Kubernetes minor the driver installs, if the validator knows
    it, else the newest it knows."""
    import kubernetes_validate
    from kubernetes_validate import utils
    wanted = CONF.kubernetes_mgmt.kubernetes_version
    known = {utils.major_minor(v) for v in utils.all_versions()}
    return wanted if wanted in known else kubernetes_validate.latest_version()


def problems(name: str, text: str, version: str | None = None) -> list[str]:
    """One message per document of ``text`` that the schema rejects."""
    import kubernetes_validate
    version = version or schema_version()
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        return [f'{name} is not valid YAML: {_one_line(exc)}']
    found = []
    for index, document in enumerate(documents, start=1):
        where = f'{name} document {index} ({_kind(document)})'
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = '.'.join(str(p) for p in exc.path) or '(top)'
            found.append(f'{where}: {path}: {_one_line(exc.message)}')
        except (kubernetes_validate.SchemaNotFoundError,
                kubernetes_validate.InvalidSchemaError) as exc:
            found.append(f'{where}: {_one_line(getattr(exc, "message", exc))}')
        except (KeyError, TypeError, AttributeError):
            found.append(f'{where}: not a Kubernetes object (apiVersion '
                         'and kind are required)')
    return found


def _kind(document: Any) -> str:
    if isinstance(document, dict):
        return f"{document.get('kind', '?')} {document.get('apiVersion', '?')}"
    return type(document).__name__


def _one_line(value: object) -> str:
    return ' '.join(str(value).split())


def pv_problems(name: str, text: str,
                exports: Iterable[str] = ()) -> list[str]:
    """What keeps the driver from registering ``text`` as an NFS volume
    (the driver's own check, ``storage.pv_manifests``): exactly one
    ``PersistentVolume`` with ``spec.nfs``; with ``exports`` (the
    request's ``export_dir`` values) a path in one of them."""
    try:
        parse_pv_manifest(name, text, list(exports))
    except InvalidManifest as exc:
        return [str(exc)]
    return []
