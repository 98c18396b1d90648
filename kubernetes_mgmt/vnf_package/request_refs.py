"""Package paths that Instantiate requests reference.

The driver reads ``script_path`` and ``pv_manifest_file_path`` from the
unpacked package; Tacker imports ``lcm-operation-user-data`` from it. A
request naming a file the package lacks fails only at instantiation, after
the VMs were created; verify finds it before the upload.
"""
from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_mgmt.params.schema import (
    PARAM_KEY,
    USER_DATA_CLASS_KEY,
    USER_DATA_KEY,
)

_CAMEL_PARAM_KEY = 'k8sClusterInstallationParam'


class RequestUnreadable(Exception):
    """A request file cannot be read or is not JSON; one-line message."""


PV_MANIFEST = 'pv_manifest'
INSTALL_SCRIPT = 'install_script'


@dataclass(frozen=True)
class Reference:
    request: str        # file name of the request, for messages
    key: str            # JSON path of the value
    path: str           # path inside the package
    kind: str = 'file'  # PV_MANIFEST: a PersistentVolume the driver
    #                     registers; INSTALL_SCRIPT: the script it runs


@dataclass(frozen=True)
class UserData:
    request: str
    path: str
    class_name: str

    @property
    def module(self) -> str:
        """The module name Tacker imports (``UserData.k8s_...``)."""
        return posixpath.splitext(self.path)[0].replace('/', '.')


@dataclass(frozen=True)
class RequestRefs:
    name: str
    flavour: str | None
    references: tuple[Reference, ...]
    user_data: UserData | None
    # storage_server.nfs_server_setup_params[].export_dir
    nfs_exports: tuple[str, ...] = ()
    kubernetes_version: str | None = None
    body: dict = field(default_factory=dict, compare=False, repr=False)


def instantiate_requests(directory: Path) -> list[Path]:
    """The Instantiate request samples: those naming a flavour (scale and
    heal bodies of the v2 API carry additionalParams too)."""
    return [path for path in sorted(directory.glob('*.json'))
            if 'flavourId' in _load(path)]


def read(path: Path) -> RequestRefs:
    body = _load(path)
    name = path.name
    additional = body.get('additionalParams') or {}
    param = additional.get(PARAM_KEY) or additional.get(
        _CAMEL_PARAM_KEY) or {}
    if not isinstance(param, dict):
        param = {}
    refs = [Reference(name, f'additionalParams.{PARAM_KEY}.script_path',
                      _package_path(param.get('script_path')),
                      INSTALL_SCRIPT)]
    for index, pv in enumerate(_list(param.get('pv_registration_params'))):
        refs.append(Reference(
            name, f'additionalParams.{PARAM_KEY}.pv_registration_params'
                  f'[{index}].pv_manifest_file_path',
            _package_path(pv.get('pv_manifest_file_path')), PV_MANIFEST))
    user_data = None
    if additional.get(USER_DATA_KEY):
        path_in_package = _package_path(additional[USER_DATA_KEY])
        refs.append(Reference(name, f'additionalParams.{USER_DATA_KEY}',
                              path_in_package))
        user_data = UserData(name, path_in_package,
                             str(additional.get(USER_DATA_CLASS_KEY, '')))
    storage = param.get('storage_server')
    exports = _list(storage.get('nfs_server_setup_params')) \
        if isinstance(storage, dict) else []
    flavour = body.get('flavourId')
    return RequestRefs(name, flavour if isinstance(flavour, str) else None,
                       tuple(r for r in refs if r.path), user_data,
                       tuple(e['export_dir'] for e in exports
                             if isinstance(e.get('export_dir'), str)),
                       _text(param.get('kubernetes_version')), body)


def _load(path: Path) -> dict:
    try:
        body = json.loads(path.read_text(encoding='utf-8-sig'))
    except OSError as exc:
        raise RequestUnreadable(f'cannot read {path}: '
                                f'{exc.strerror or exc}') from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RequestUnreadable(f'{path} is not JSON: {exc}') from None
    if not isinstance(body, dict):
        raise RequestUnreadable(f'{path} is not a JSON object')
    return body


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _package_path(value: Any) -> str:
    """Like Tacker: './UserData/x.py' is 'UserData/x.py' in the package."""
    if not isinstance(value, str):
        return ''
    return posixpath.normpath(value) if value.strip() else ''


def _list(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] \
        if isinstance(value, list) else []
