"""``KubernetesNamespacedDriver``: Tacker's infra-driver interface for
CNFs, each VNF instance kept in one namespace.

Enabled by listing ``kubernetes-namespaced`` instead of ``kubernetes`` in
``[tacker] vnflcm_infra_driver`` (and ``infra_driver``, which Tacker's
v1 scale uses). ``get_type()`` is ``kubernetes``: Tacker picks the
driver by the VIM type. Method names and keyword arguments are exactly
those Tacker 16's ``VnfLcmDriver`` passes.
"""
from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

from kubernetes_mgmt import redact
from kubernetes_mgmt.cnf import (
    deploy,
    fields,
    healing,
    instance,
    kube,
    pods,
    scaling,
    teardown,
    vnfcs,
    vnfd,
)
from kubernetes_mgmt.cnf import request_check as plans
from kubernetes_mgmt.cnf.errors import CnfError
from kubernetes_mgmt.cnf.lcm_store import LcmStore
from kubernetes_mgmt.cnf.settings import Timings
from kubernetes_mgmt.cnf.vim import VimAccess

LOG = redact.get_logger(__name__)

# tacker.objects.fields.ErrorPoint.POST_VIM_CONTROL: set once objects
# exist, so a failed wait is rolled back by deleting them.
POST_VIM_CONTROL = 4


class NotSupported(CnfError, NotImplementedError):
    """An infra-driver operation this driver does not offer."""


@redact.scoped_hooks  # each call is one operation for secret masking
class KubernetesNamespacedDriver:
    """Kubernetes infra driver keeping each CNF in one namespace."""

    def __init__(self, store: LcmStore | None = None,
                 timings: Timings | None = None):
        if store is None:
            from kubernetes_mgmt.cnf.tacker_store import TackerStore
            store = TackerStore()
        self._store = store
        self._timings = timings or Timings.from_conf()

    # -- identity -------------------------------------------------------
    def get_type(self):
        return 'kubernetes'

    def get_name(self):
        return 'kubernetes-namespaced'

    def get_description(self):
        return 'Kubernetes infra driver keeping each CNF in one namespace'

    # -- helpers --------------------------------------------------------
    @contextlib.contextmanager
    def _session(self, access_info: dict) -> Iterator[kube.KubeSession]:
        vim = VimAccess.from_access_info(access_info)
        with kube.open_session(vim, self._timings) as session:
            yield session

    def _plan(self, context, vnf_instance, request, package_path):
        params = fields.value(request, 'additional_params', {}) or {}
        package = package_path or self._store.package_dir(
            context, vnf_instance.vnfd_id)
        return plans.build(package, params)

    def _vnfd(self, context, vnf_instance, flavour_id=None) -> dict:
        info = fields.value(vnf_instance, 'instantiated_vnf_info')
        flavour = flavour_id or fields.value(info, 'flavour_id')
        return self._store.vnfd(context, vnf_instance.vnfd_id, flavour)

    def _scale_target(self, context, vnf_instance, aspect_id,
                      vdu_defs=None) -> scaling.ScaleTarget:
        if not vdu_defs:
            vdu_defs = vnfd.aspect_vdu_defs(
                self._vnfd(context, vnf_instance), aspect_id)
        records = self._store.resources(context, vnf_instance.id)
        return scaling.find_target(aspect_id, vdu_defs, records)

    # -- instantiate ----------------------------------------------------
    def pre_instantiation_vnf(self, context, vnf_instance,
                              vim_connection_info, vnf_software_images,
                              instantiate_vnf_req=None,
                              vnf_package_path=None):
        """Validate the whole request (no cluster call yet), record the
        namespace in vnf_metadata and return the objects to record."""
        plan = self._plan(context, vnf_instance, instantiate_vnf_req,
                          vnf_package_path)
        VimAccess.from_access_info(vim_connection_info.access_info)
        instance.remember_namespace(vnf_instance, plan.namespace.namespace)
        self._store.save(vnf_instance)
        LOG.info('VNF instance %s goes to namespace %s (from %s)',
                 vnf_instance.id, plan.namespace.namespace,
                 plan.namespace.source)
        return {0: [self._store.new_resource(context, vnf_instance, record)
                    for record in plan.records()]}

    def instantiate_vnf(self, context, vnf_instance, vnfd_dict,
                        vim_connection_info, instantiate_vnf_req,
                        grant_response, vnf_package_path=None,
                        plugin=None):
        plan = self._plan(context, vnf_instance, instantiate_vnf_req,
                          vnf_package_path)
        namespace = instance.namespace_of(vnf_instance)
        if plan.namespace.namespace != namespace:
            raise CnfError(
                f'VNF instance {vnf_instance.id}: the request now resolves '
                f'to namespace {plan.namespace.namespace!r}, but '
                f'{namespace!r} was recorded at pre-instantiation')
        replicas = vnfd.initial_replicas(
            self._vnfd(context, vnf_instance, instantiate_vnf_req.flavour_id),
            fields.value(instantiate_vnf_req, 'instantiation_level_id'))
        with self._session(vim_connection_info.access_info) as session:
            items = deploy.create(session, plan, vnf_instance.id, replicas)
            if isinstance(vnfd_dict, dict):
                vnfd_dict['current_error_point'] = POST_VIM_CONTROL
            deploy.wait_ready(session, items, self._timings)
        if isinstance(vnfd_dict, dict):
            vnfd_dict['instance_id'] = vnf_instance.id
        return vnf_instance.id

    def create_wait(self, plugin, context, vnf_dict, vnf_id, auth_attr):
        """Nothing left to wait for: instantiate_vnf waits for readiness
        itself (this call gets no instance, so no namespace)."""

    def update_stack_wait(self, plugin, context, vnf_dict, stack_id,
                          auth_attr):
        """Called instead of create_wait when a retry resumes after the
        objects were created; instantiate_vnf has waited already."""

    def post_vnf_instantiation(self, context, vnf_instance,
                               vim_connection_info, instantiate_vnf_req):
        """Record one VNFC per pod of every workload that a VDU names."""
        namespace = instance.namespace_of(vnf_instance)
        records = self._store.resources(context, vnf_instance.id)
        vdu_ids = vnfd.vdu_id_by_name(self._vnfd(context, vnf_instance))
        with self._session(vim_connection_info.access_info) as session:
            specs = vnfcs.for_records(session, records, namespace, vdu_ids)
        vnf_instance.instantiated_vnf_info.vnfc_resource_info = [
            self._store.new_vnfc(spec) for spec in specs]

    # -- scale ----------------------------------------------------------
    def scale(self, context, plugin, auth_attr, policy, region_name):
        vnf_instance = self._store.load_instance(
            context, policy['vnf_instance_id'])
        namespace = instance.namespace_of(vnf_instance)
        target = self._scale_target(context, vnf_instance, policy['name'],
                                    policy.get('vdu_defs'))
        delta = policy.get('delta_num') or vnfd.aspect_delta(
            self._vnfd(context, vnf_instance), policy['name'])
        with self._session(auth_attr) as session:
            replicas = scaling.scale(session, target, namespace,
                                     policy['action'], int(delta))
        LOG.info('VNF instance %s: %s now has %d replicas in namespace %s',
                 vnf_instance.id, target.record.describe(), replicas,
                 namespace)

    def scale_wait(self, context, plugin, auth_attr, policy, region_name,
                   last_event_id):
        vnf_instance = self._store.load_instance(
            context, policy['vnf_instance_id'])
        namespace = instance.namespace_of(vnf_instance)
        target = self._scale_target(context, vnf_instance, policy['name'],
                                    policy.get('vdu_defs'))
        with self._session(auth_attr) as session:
            scaling.wait_scaled(session, target, namespace, self._timings)

    def get_scale_ids(self, plugin, context, vnf_dict, auth_attr,
                      region_name):
        return []

    def get_scale_in_ids(self, plugin, context, vnf_dict, is_reverse,
                         auth_attr, region_name, number_of_steps):
        return [], [], None, None

    def scale_resource_update(self, context, vnf_instance,
                              scale_vnf_request, vnf_info,
                              vim_connection_info):
        """Make the VNFC entries of the scaled VDU match its pods."""
        namespace = instance.namespace_of(vnf_instance)
        target = self._scale_target(context, vnf_instance,
                                    scale_vnf_request.aspect_id)
        info = vnf_instance.instantiated_vnf_info
        with self._session(vim_connection_info.access_info) as session:
            obj = vnfcs.workload(session, target.record, namespace)
            alive = [p for p in pods.of_workload(session, obj, namespace)
                     if not p.terminating]
        names = {p.name for p in alive}
        kept = [v for v in info.vnfc_resource_info
                if v.vdu_id != target.vdu_id
                or v.compute_resource.resource_id in names]
        known = {v.compute_resource.resource_id for v in kept}
        kept += [self._store.new_vnfc(vnfcs.spec_for(
            target.record, target.vdu_id, p))
            for p in alive if p.name not in known]
        info.vnfc_resource_info = kept

    def scale_in_reverse(self, context, plugin, auth_attr, vnf_info,
                         scale_vnf_request, region_name, scale_name_list,
                         grp_id, vnf_instance):
        """Undo a scale out (rollback): scale the aspect in again."""
        policy = {'name': scale_vnf_request.aspect_id, 'action': 'in',
                  'vnf_instance_id': vnf_instance.id}
        steps = fields.value(scale_vnf_request, 'number_of_steps', 1)
        for _ in range(int(steps)):
            self.scale(context, plugin, auth_attr, policy, region_name)

    def scale_out_initial(self, context, plugin, auth_attr, vnf_info,
                          scale_vnf_request, region_name):
        """Nothing to prepare: workloads exist from instantiation."""

    def scale_update_wait(self, context, plugin, auth_attr, vnf_info,
                          region_name):
        occurrence = vnf_info['vnf_lcm_op_occ']
        params = fields.value(occurrence, 'operation_params', '{}')
        if isinstance(params, str):
            params = json.loads(params)
        policy = {'name': params['aspect_id'],
                  'vnf_instance_id': fields.value(occurrence,
                                                  'vnf_instance_id')}
        self.scale_wait(context, plugin, auth_attr, policy, region_name,
                        None)

    def get_rollback_ids(self, plugin, context, vnf_dict, aspect_id,
                         auth_attr, region_name):
        return [], [], None

    def get_cinder_list(self, vnf_info):
        return None

    def get_grant_resource(self, plugin, vnf_instance, vnf_info,
                           scale_vnf_request, placement_obj_list,
                           vim_connection_info, del_list):
        return None

    # -- heal -----------------------------------------------------------
    @contextlib.contextmanager
    def _healing(self, vnf_instance, vim_connection_info, heal_vnf_request
                 ) -> Iterator[tuple[kube.KubeSession, list, str]]:
        """(session, VNFCs to heal, namespace) of a heal request."""
        namespace = instance.namespace_of(vnf_instance)
        targets = healing.select(
            vnf_instance.instantiated_vnf_info.vnfc_resource_info,
            fields.value(heal_vnf_request, 'vnfc_instance_id', []))
        with self._session(vim_connection_info.access_info) as session:
            yield session, targets, namespace

    def heal_vnf(self, context, vnf_instance, vim_connection_info,
                 heal_vnf_request):
        with self._healing(vnf_instance, vim_connection_info,
                           heal_vnf_request) as (session, targets, ns):
            healing.heal(session, targets, ns, self._timings)

    def heal_vnf_wait(self, context, vnf_instance, vim_connection_info,
                      heal_vnf_request):
        with self._healing(vnf_instance, vim_connection_info,
                           heal_vnf_request) as (session, targets, ns):
            healing.wait_healed(session, targets, ns, self._timings)

    def post_heal_vnf(self, context, vnf_instance, vim_connection_info,
                      heal_vnf_request):
        with self._healing(vnf_instance, vim_connection_info,
                           heal_vnf_request) as (session, targets, ns):
            healing.rename(session, vnf_instance.instantiated_vnf_info
                           .vnfc_resource_info, targets, ns)

    # -- terminate ------------------------------------------------------
    @staticmethod
    def _grace_seconds(terminate_vnf_req) -> int | None:
        kind = fields.value(terminate_vnf_req, 'termination_type')
        if kind == 'FORCEFUL':
            return 0
        if kind == 'GRACEFUL':
            timeout = fields.value(terminate_vnf_req,
                                   'graceful_termination_timeout')
            return None if timeout is None else int(timeout)
        return None

    def delete(self, plugin, context, vnf_id, auth_attr, region_name=None,
               vnf_instance=None, terminate_vnf_req=None):
        if vnf_instance is None:
            raise CnfError('delete: Tacker passed no VNF instance')
        namespace = instance.namespace_of(vnf_instance)
        grace = self._grace_seconds(terminate_vnf_req)
        # delete_wait needs it; Tacker saves the instance in between, so
        # it survives a conductor restart and never mixes operations.
        instance.remember_grace(vnf_instance, grace)
        records = self._store.resources(context, vnf_instance.id)
        with self._session(auth_attr) as session:
            found = teardown.targets(session, records, namespace)
            teardown.delete_all(session, found, grace)

    def delete_wait(self, plugin, context, vnf_id, auth_attr,
                    region_name=None, vnf_instance=None):
        if vnf_instance is None:
            raise CnfError('delete_wait: Tacker passed no VNF instance')
        namespace = instance.namespace_of(vnf_instance)
        # Pods may take their whole grace period to stop.
        deadline = self._timings.delete + (
            instance.grace_of(vnf_instance) or 0)
        records = self._store.resources(context, vnf_instance.id)
        with self._session(auth_attr) as session:
            found = teardown.targets(session, records, namespace)
            teardown.wait_gone(session, found, self._timings, deadline)
        instance.forget_grace(vnf_instance)

    def delete_vnf_instance_resource(self, context, vnf_instance,
                                     vim_connection_info, vnf_resource):
        """Tacker drops the record next; delete() removed the object."""

    # -- not offered ------------------------------------------------------
    def _unsupported(self, what: str):
        raise NotSupported(f'{what} is not supported by the '
                           'kubernetes-namespaced infra driver')

    def create(self, plugin, context, vnf):
        self._unsupported('the legacy VNFM API (create)')

    def update(self, plugin, context, vnf_id, vnf_dict, vnf, auth_attr=None):
        self._unsupported('the legacy VNFM API (update)')

    def update_wait(self, plugin, context, vnf_dict, auth_attr=None,
                    region_name=None):
        self._unsupported('the legacy VNFM API (update)')

    def get_resource_info(self, plugin, context, vnf_info, auth_attr,
                          region_name=None):
        return None

    def change_ext_conn_vnf(self, context, vnf_instance, vnf_dict,
                            vim_connection_info, change_ext_conn_req):
        self._unsupported('change external VNF connectivity')

    def change_ext_conn_vnf_wait(self, context, vnf_instance,
                                 vim_connection_info):
        self._unsupported('change external VNF connectivity')

    def post_change_ext_conn_vnf(self, context, vnf_instance,
                                 vim_connection_info):
        self._unsupported('change external VNF connectivity')

    def sync_db(self, context, vnf_instance, vim_info):
        """Tacker's periodic DB sync: VNFC entries are refreshed by
        scale and heal; nothing to do between operations."""
