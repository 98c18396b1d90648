"""A CNF package against its Instantiate requests, checked as the
kubernetes-namespaced infra driver checks them before it calls the
cluster: the ``lcm-kubernetes-def-files`` are in the package and hold
Kubernetes objects, and their namespaces agree with the request's.
"""
from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from pathlib import Path

from kubernetes_mgmt.cnf import plan
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.vnf_package.csar import Csar, unsafe_name


def _unpack(csar: Csar, root: Path) -> None:
    # The driver reads the files from the unpacked package; so do we.
    for name in csar.names:
        if unsafe_name(name) or name.endswith('/'):
            continue
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(csar.read(name))


def check(csar: Csar, requests: Iterable[Path]
          ) -> tuple[list[str], list[str]]:
    """(names of the requests checked, one line per problem)."""
    checked, problems = [], []
    with tempfile.TemporaryDirectory(prefix='cnf-package-') as tmp:
        _unpack(csar, Path(tmp))
        for path in requests:
            params = json.loads(path.read_text(encoding='utf-8-sig')).get(
                'additionalParams') or {}
            checked.append(path.name)
            try:
                plan.build(Path(tmp), params)
            except ValidationError as exc:
                problems += [f'{path.name}: {p}' for p in exc.problems]
    return checked, problems
