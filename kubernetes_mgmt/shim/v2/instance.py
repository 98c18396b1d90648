"""A v2 VNF instance (``VnfInstanceV2.to_dict()``), seen as the v1 instance
the lifecycle hooks read and change.

What maps where (Tacker 16.0.0):

- ``vnf_metadata`` is the instance's ``metadata``: the driver's signed
  state goes there, and Tacker keeps what the script returns.
- ``instantiated_vnf_info.instance_id`` is ``instantiatedVnfInfo.metadata
  .stack_id``; ``vnfc_resource_info`` lists the VNFCs by the ids of
  ``vnfcInfo`` (what a v2 heal request names), each with its server.
- ``instantiated_vnf_info.additional_params`` are the instantiate
  parameters the driver sealed into ``metadata`` (v2 keeps none).
- ``vim_connection_info`` holds the OpenStack VIM(s) only: Tacker's v2
  code assumes one VIM per instance, so the Kubernetes VIM the driver
  registers is described in ``metadata`` (``kubernetesVim``) instead.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from kubernetes_mgmt.shim.v2 import sealed
from kubernetes_mgmt.state.instance_state import METADATA_KEY as STATE_KEY

PARAMS_KEY = 'kubernetesMgmtParams'
VIM_KEY = 'kubernetesVim'
KUBERNETES = 'kubernetes'


@dataclass
class VimConnection:
    """The fields of a VIM connection the hooks read (v1 names)."""

    vim_id: str | None
    vim_type: str
    access_info: dict = field(default_factory=dict)
    interface_info: dict = field(default_factory=dict)
    id: str = ''


class InstantiatedInfo:
    """``instantiated_vnf_info`` of the v1 shape, over the v2 dict."""

    def __init__(self, instance: V2Instance):
        self._instance = instance
        self._info = instance.data.get('instantiatedVnfInfo') or {}

    @property
    def instance_id(self) -> str | None:
        return (self._info.get('metadata') or {}).get('stack_id')

    @property
    def flavour_id(self) -> str | None:
        return self._info.get('flavourId')

    @property
    def vnfc_resource_info(self) -> list[dict]:
        resources = {r.get('id'): r
                     for r in self._info.get('vnfcResourceInfo') or []}
        found = []
        for vnfc in self._info.get('vnfcInfo') or []:
            resource = resources.get(vnfc.get('vnfcResourceInfoId')) or {}
            compute = resource.get('computeResource') or {}
            found.append({'id': vnfc.get('id'),
                          'vdu_id': vnfc.get('vduId'),
                          'compute_resource': {
                              'resource_id': compute.get('resourceId')}})
        return found

    @property
    def additional_params(self) -> dict:
        return self._instance.stored_params()


class V2Instance:
    def __init__(self, data: dict):
        self.data = copy.deepcopy(data)
        # As Tacker keeps it: before a failed attempt's state is adopted.
        self.persisted = copy.deepcopy(data)
        self._adopted: str | None = None
        self._cluster_vims: list[VimConnection] | None = None

    # -- what the v1 hooks read ----------------------------------------

    @property
    def id(self) -> str:
        return str(self.data.get('id') or '')

    @property
    def vnfd_id(self) -> str | None:
        return self.data.get('vnfdId')

    @property
    def instantiated_vnf_info(self) -> InstantiatedInfo:
        return InstantiatedInfo(self)

    @property
    def vnf_configurable_properties(self) -> dict:
        return dict(self.data.get('vnfConfigurableProperties') or {})

    @property
    def vnf_metadata(self) -> dict:
        return dict(self.data.get('metadata') or {})

    @vnf_metadata.setter
    def vnf_metadata(self, value: dict) -> None:
        self.data['metadata'] = dict(value)

    @property
    def vim_connection_info(self) -> list[VimConnection]:
        openstack = [VimConnection(
            vim_id=c.get('vimId'), vim_type=str(c.get('vimType') or ''),
            access_info=dict(c.get('accessInfo') or {}),
            interface_info=dict(c.get('interfaceInfo') or {}), id=name)
            for name, c in (self.data.get('vimConnectionInfo') or {}).items()]
        return openstack + self.cluster_vims()

    @vim_connection_info.setter
    def vim_connection_info(self, value: list[Any]) -> None:
        self._cluster_vims = [
            VimConnection(vim_id=getattr(c, 'vim_id', None),
                          vim_type=KUBERNETES,
                          access_info=dict(getattr(c, 'access_info', {})),
                          interface_info=dict(
                              getattr(c, 'interface_info', None) or {}))
            for c in value if getattr(c, 'vim_type', '') == KUBERNETES]

    # -- v2 only -------------------------------------------------------

    def cluster_vims(self) -> list[VimConnection]:
        if self._cluster_vims is not None:
            return list(self._cluster_vims)
        stored = self.vnf_metadata.get(VIM_KEY)
        if not isinstance(stored, dict) or not stored.get('vimId'):
            return []
        return [VimConnection(
            vim_id=stored['vimId'], vim_type=KUBERNETES,
            access_info={'auth_url': stored.get('endpoint')},
            interface_info={'ssl_ca_cert': stored.get('sslCaCert')}
            if stored.get('sslCaCert') else {})]

    def persisted_instance(self) -> V2Instance:
        """The instance as Tacker keeps it, without what a failed attempt
        of this operation handed on (a node it remembered may never
        have joined)."""
        return V2Instance(self.persisted)

    @property
    def state_kept_by_tacker(self) -> Any:
        """The driver's stored state as Tacker keeps it: what it handed
        this script. Only loading that raises this host's generation floor
        (``instance_state``): what this script saves, or adopted from a
        failed attempt, reaches Tacker only if the operation succeeds."""
        return (self.persisted.get('metadata') or {}).get(STATE_KEY)

    def adopt_state(self, stored: str | None) -> None:
        """Take the driver's state a failed attempt left (it verifies
        when loaded, as any stored state, and must be no older than the
        newest this host has seen)."""
        if stored:
            metadata = self.vnf_metadata
            metadata[STATE_KEY] = stored
            self.vnf_metadata = metadata
            self._adopted = stored

    def for_tacker(self) -> dict:
        """The instance to hand back to Tacker. A state this script only
        adopted, and did not save anew, goes back as Tacker kept it: Tacker
        merges a start script's result into the instance the end script
        then gets, which would take the failed attempt's state for
        Tacker's own (it hands that state to every script of the retry
        anyway)."""
        data = self.to_dict()
        metadata = dict(data.get('metadata') or {})
        if self._adopted is None or metadata.get(STATE_KEY) != self._adopted:
            return data
        kept = self.state_kept_by_tacker
        if kept is None:
            metadata.pop(STATE_KEY, None)
        else:
            metadata[STATE_KEY] = kept
        return {**data, 'metadata': metadata}

    def stored_params(self) -> dict:
        text = self.vnf_metadata.get(PARAMS_KEY)
        if text is None:
            return {}
        return sealed.unseal(self.id, text, f'metadata[{PARAMS_KEY!r}] of '
                             f'VNF instance {self.id}')

    def store_params(self, params: dict) -> None:
        metadata = self.vnf_metadata
        metadata[PARAMS_KEY] = sealed.seal(self.id, params)
        self.vnf_metadata = metadata

    def forget_params(self) -> None:
        metadata = self.vnf_metadata
        metadata.pop(PARAMS_KEY, None)
        self.vnf_metadata = metadata

    def vnfc_resources(self) -> list[dict]:
        return list((self.data.get('instantiatedVnfInfo') or {})
                    .get('vnfcResourceInfo') or [])

    def to_dict(self) -> dict:
        """The instance to hand back: ``metadata`` carries the state, the
        sealed parameters and the cluster's VIM."""
        data = copy.deepcopy(self.data)
        metadata = dict(data.get('metadata') or {})
        vims = self.cluster_vims()
        if vims:
            metadata[VIM_KEY] = {
                'vimId': vims[0].vim_id, 'vimType': KUBERNETES,
                'endpoint': vims[0].access_info.get('auth_url'),
                'sslCaCert': vims[0].interface_info.get('ssl_ca_cert')}
        else:
            metadata.pop(VIM_KEY, None)
        data['metadata'] = metadata
        return data
