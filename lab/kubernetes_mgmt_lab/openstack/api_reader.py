"""Tacker's and Heat's REST APIs read with one keystone session, for the
lab's polls and checks.

The operator's commands go through the ``openstack`` CLI; waiting for
their effect does not: each CLI call is a new Python process and a new
Keystone token (about 1.3 s of CPU for the CLI and 0.2 s for Keystone on
two cores shared with everything else), and an operation is polled every
few seconds. One session keeps its token, so a poll costs a GET."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubernetes_mgmt_lab.openstack.access import Site
from kubernetes_mgmt_lab.openstack.layout import REGION, Root

SERVICE_TYPE = 'nfv-orchestration'


@dataclass
class ApiReader:
    """GETs on the root's Tacker and Heat as their admin;
    ``api_version``: the VNF LCM API (1 or 2) of the operations read."""

    root: Root
    api_version: int = 1
    _session: Any = field(default=None, repr=False)

    def op_occurrence(self, op_id: str) -> dict:
        """The operation occurrence (SOL003 VnfLcmOpOcc)."""
        return self._get(f'{self._lcm}/vnf_lcm_op_occs/{op_id}')

    def op_occurrences(self, vnf_id: str) -> list[dict]:
        """The operation occurrences of one VNF instance."""
        return self._get(f'{self._lcm}/vnf_lcm_op_occs',
                         params={'filter': f'(eq,vnfInstanceId,{vnf_id})'})

    def vnf_instance(self, vnf_id: str) -> dict:
        """The VNF instance (SOL003 VnfInstance)."""
        return self._get(f'{self._lcm}/vnf_instances/{vnf_id}')

    def package(self, package_id: str) -> dict:
        return self._get(f'/vnfpkgm/v1/vnf_packages/{package_id}')

    def packages(self) -> list[dict]:
        return self._get('/vnfpkgm/v1/vnf_packages')

    def vim_types(self) -> dict[str, str]:
        """Each registered VIM's id and type."""
        return {v['id']: v['type'] for v in self._get('/v1.0/vims')['vims']}

    def stack_resources(self, stack: str) -> list[dict]:
        """The stack's resources, nested ones included (as ``openstack
        stack resource list -n 5``)."""
        from heatclient import client

        heat = client.Client('1', session=self._keystone_session(),
                             region_name=REGION)
        return [r.to_dict() for r in heat.resources.list(stack,
                                                         nested_depth=5)]

    @property
    def _lcm(self) -> str:
        return f'/vnflcm/v{self.api_version}'

    def _get(self, path: str, params: dict | None = None):
        # The v2 API refuses a request without its version header.
        headers = {'Version': '2.0.0'} if self.api_version == 2 and \
            path.startswith('/vnflcm/') else {}
        response = self._keystone_session().get(
            path, params=params, headers=headers,
            endpoint_filter={'service_type': SERVICE_TYPE,
                             'interface': 'public', 'region_name': REGION})
        return response.json()

    def _keystone_session(self):
        if self._session is None:
            from keystoneauth1 import session
            from keystoneauth1.identity import v3

            site = Site.of(self.root.path)
            self._session = session.Session(auth=v3.Password(**site.auth()))
        return self._session
