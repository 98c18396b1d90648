"""What the driver remembers of each object it creates.

Tacker keeps one ``VnfResource`` row per object: ``resource_type`` is
``"<apiVersion>,<kind>"`` and ``resource_name`` the bare object name --
never ``namespace,name``: the namespace lives in
``vnf_metadata['namespace']`` only.
"""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt.cnf.errors import CnfError


@dataclass(frozen=True)
class ResourceRecord:
    api_version: str
    kind: str
    name: str

    @property
    def resource_type(self) -> str:
        return f'{self.api_version},{self.kind}'

    def describe(self) -> str:
        return f'{self.kind}/{self.name}'

    @classmethod
    def from_row(cls, resource_type: str, resource_name: str
                 ) -> ResourceRecord:
        api_version, sep, kind = (resource_type or '').partition(',')
        if not sep or not kind or not resource_name:
            raise CnfError(
                f'VnfResource row with resource_type={resource_type!r}, '
                f'resource_name={resource_name!r} is not an object this '
                'driver created ("<apiVersion>,<kind>" and a name)')
        return cls(api_version, kind, resource_name)
