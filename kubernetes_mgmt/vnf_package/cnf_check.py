"""A CNF package against its Instantiate requests, checked as the
kubernetes-namespaced infra driver checks them before it calls the
cluster: the ``lcm-kubernetes-def-files`` are in the package and hold
Kubernetes objects, and their namespaces agree with the request's.
"""
from __future__ import annotations

import json
import posixpath
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubernetes_mgmt.cnf import request_check as plan
from kubernetes_mgmt.cnf.manifests import FILES_KEY
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.vnf_package.csar import Csar


def _unpack(csar: Csar, root: Path, params: Any) -> None:
    """The files the request names, where the driver reads them: under
    the unpacked package (``root``). The driver's own check reports a
    name that leaves the package or is not in it."""
    files = params.get(FILES_KEY) \
        if isinstance(params, dict) else None
    for value in files if isinstance(files, list) else []:
        name = posixpath.normpath(value) if isinstance(value, str) else ''
        if csar.has(name) and not (root / name).exists():
            csar.extract(name, root)


def check(csar: Csar, requests: Iterable[Path]
          ) -> tuple[list[str], list[str]]:
    """(names of the requests checked, one line per problem)."""
    checked, problems = [], []
    with tempfile.TemporaryDirectory(prefix='cnf-package-') as tmp:
        for path in requests:
            params = json.loads(path.read_text(encoding='utf-8-sig')).get(
                'additionalParams') or {}
            checked.append(path.name)
            _unpack(csar, Path(tmp), params)
            try:
                plan.build(Path(tmp), params)
            except ValidationError as exc:
                problems += [f'{path.name}: {p}' for p in exc.problems]
    return checked, problems
