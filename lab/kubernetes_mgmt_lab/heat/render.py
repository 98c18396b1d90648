"""Heat API v1 JSON shapes for the double's stacks and resources.

Field names and link layout follow what Heat's API returns, because
clients (heatclient's ``Resource.stack_name``, Tacker, our topology reader)
find a resource's stack through its ``links``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from kubernetes_mgmt_lab.heat import ids
from kubernetes_mgmt_lab.heat.stacks import StackTree, VResource, VStack
from kubernetes_mgmt_lab.state import LabState


@dataclass
class StackStatus:
    action: str = 'CREATE'
    status: str = 'COMPLETE'
    reason: str = 'Stack CREATE completed successfully'
    updated_time: str | None = None

    @property
    def stack_status(self) -> str:
        return f'{self.action}_{self.status}'


def stack_href(base: str, stack: VStack) -> str:
    return f'{base}/stacks/{stack.name}/{stack.id}'


def resource_summary(base: str, tree: StackTree, stack: VStack,
                     res: VResource) -> dict:
    href = stack_href(base, stack)
    links = [{'href': f'{href}/resources/{res.name}', 'rel': 'self'},
             {'href': href, 'rel': 'stack'}]
    nested = tree.stacks.get(res.nested_id or '')
    if nested:
        links.append({'href': stack_href(base, nested), 'rel': 'nested'})
    status, reason = (('CHECK_FAILED', 'marked unhealthy') if res.failed
                      else ('CREATE_COMPLETE', 'state changed'))
    if res.error:
        status, reason = res.error
    body = {'resource_name': res.name, 'logical_resource_id': res.name,
            'physical_resource_id': res.physical_id,
            'resource_type': res.type, 'resource_status': status,
            'resource_status_reason': reason,
            'creation_time': ids.timestamp(res.ordinal),
            'updated_time': ids.timestamp(res.ordinal),
            'required_by': [], 'links': links}
    if stack.parent_resource:
        body['parent_resource'] = stack.parent_resource
    return body


def resource_detail(base: str, tree: StackTree, stack: VStack,
                    res: VResource) -> dict:
    body = resource_summary(base, tree, stack, res)
    body.update(attributes=res.attributes, description='', metadata={})
    return body


def stack_detail(base: str, tree: StackTree, stack: VStack,
                 status: StackStatus, state: LabState,
                 with_outputs: bool = True) -> dict:
    body = stack_summary(base, stack, status)
    body.update(parameters=_parameters(tree, stack, state),
                capabilities=[], notification_topics=[],
                disable_rollback=True, timeout_mins=None,
                stack_owner=None, template_description='lab stack')
    if with_outputs:
        body['outputs'] = []
    return body


def stack_summary(base: str, stack: VStack, status: StackStatus) -> dict:
    return {'id': stack.id, 'stack_name': stack.name,
            'description': 'lab stack', 'parent': stack.parent_id,
            'stack_status': status.stack_status,
            'stack_status_reason': status.reason,
            'creation_time': ids.timestamp(stack.ordinal),
            'updated_time': status.updated_time, 'deletion_time': None,
            'tags': None,
            'links': [{'href': stack_href(base, stack), 'rel': 'self'}]}


def _parameters(tree: StackTree, stack: VStack, state: LabState) -> dict:
    params = {'OS::stack_id': stack.id, 'OS::stack_name': stack.name,
              'OS::project_id': state.tenant_id}
    if stack is tree.top:
        # Heat shows json parameters as strings.
        params['nfv'] = json.dumps({'VDU': _capacities(tree, state)})
    return params


def _capacities(tree: StackTree, state: LabState) -> dict:
    vdus = {}
    for layout in state.layouts:
        group = tree.top.resources.get(layout.group or '')
        if group is not None:
            size = group.attributes.get('current_size', 0)
            vdus[layout.server] = {'desired_capacity': size}
    return vdus


def error(code: int, title: str, message: str, kind: str) -> dict:
    return {'code': code, 'title': title, 'explanation': message,
            'error': {'message': message, 'type': kind,
                      'traceback': None}}
