"""Request handling of the Heat API double, independent of HTTP plumbing.

Every request re-reads the lab state, so hosts added or replaced by ``lab``
commands show at once. Paths follow Heat's v1 API; a stack addressed by id
or name alone is redirected to ``stacks/<name>/<id>`` like Heat's lookup.
"""
from __future__ import annotations

import hmac
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from kubernetes_mgmt import redact
from kubernetes_mgmt_lab import placement
from kubernetes_mgmt_lab import state as lab_state
from kubernetes_mgmt_lab.heat import ids, render, stacks, update
from kubernetes_mgmt_lab.heat.render import StackStatus
from kubernetes_mgmt_lab.heat.stacks import StackTree, VStack
from kubernetes_mgmt_lab.state import LabState

LOG = redact.get_logger(__name__)

# Sub-collections of a stack: ``stacks/<x>/<one of these>`` is a lookup of
# stack <x>, not ``stacks/<name>/<id>``.
_STACK_CHILDREN = frozenset({
    'resources', 'outputs', 'template', 'environment', 'files', 'events',
    'actions', 'snapshots', 'abandon', 'export', 'preview'})

LabFactory = Callable[[str], update.LabMutations]


@dataclass
class Request:
    method: str
    path: str                   # without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]     # keys lower case
    body: object = None
    host: str = ''              # Host header, for redirect locations

    def param(self, name: str, default: str = '') -> str:
        return self.query.get(name, [default])[0]


@dataclass
class Response:
    status: int
    body: object = None
    headers: dict[str, str] = field(default_factory=dict)


class HttpError(Exception):
    def __init__(self, status: int, title: str, message: str, kind: str):
        super().__init__(message)
        self.response = Response(
            status, render.error(status, title, message, kind))


def not_found(message: str) -> HttpError:
    return HttpError(404, 'Not Found', message, 'EntityNotFound')


def bad_request(message: str) -> HttpError:
    return HttpError(400, 'Bad Request', message, 'HTTPBadRequest')


def default_lab(state_path: str) -> update.LabMutations:
    from kubernetes_mgmt_lab.manager import Lab  # needs root; load lazily

    return Lab.load(os.path.dirname(os.path.abspath(state_path)))


class HeatDouble:
    """Serves the lab's stack the way Heat's API would."""

    def __init__(self, state_path: str,
                 lab_factory: LabFactory = default_lab):
        self.state_path = state_path
        self.lab_factory = lab_factory
        self.statuses: dict[str, StackStatus] = {}
        # (stack id, resource name) -> (status, reason) of a failed update
        self.failures: dict[tuple[str, str], tuple[str, str]] = {}
        self._update_lock = threading.Lock()

    # -- entry point ----------------------------------------------------

    def handle(self, request: Request) -> Response:
        state = lab_state.load(self.state_path)
        try:
            self._authenticate(request, state)
            return self._route(request, state)
        except HttpError as e:
            return e.response

    def _authenticate(self, request: Request, state: LabState) -> None:
        token = request.headers.get('x-auth-token', '')
        if not hmac.compare_digest(token.encode(), state.heat_token.encode()):
            raise HttpError(401, 'Unauthorized', 'The request you have made '
                            'requires authentication.', 'Unauthorized')

    def _route(self, request: Request, state: LabState) -> Response:
        parts = [p for p in request.path.split('/') if p]
        if parts[:2] != ['v1', state.tenant_id] or parts[2:3] != ['stacks']:
            raise not_found(f'no such API path: {request.path}')
        tree = stacks.build(state)
        self._show_failures(tree)
        rest = parts[3:]
        if not rest:
            return self._list_stacks(request, tree)
        if len(rest) == 1 or rest[1] in _STACK_CHILDREN:
            return self._redirect(request, tree, rest[0], rest[1:])
        stack = tree.get(rest[0], rest[1])
        if stack is None:
            raise not_found(f'The Stack ({rest[0]}/{rest[1]}) could not be '
                            'found.')
        return self._stack_route(request, state, tree, stack, rest[2:])

    def _show_failures(self, tree: StackTree) -> None:
        for (stack_id, name), error in self.failures.items():
            stack = tree.stacks.get(stack_id)
            if stack is not None and name in stack.resources:
                stack.resources[name].error = error

    def _stack_route(self, request: Request, state: LabState,
                     tree: StackTree, stack: VStack,
                     rest: list[str]) -> Response:
        method = request.method
        if not rest and method == 'GET':
            return self._show_stack(request, state, tree, stack)
        if not rest and method in ('PATCH', 'PUT'):
            return self._update_stack(request, tree, stack)
        if rest == ['resources'] and method == 'GET':
            return self._list_resources(request, tree, stack)
        if len(rest) == 2 and rest[0] == 'resources':
            if method == 'GET':
                return self._show_resource(request, tree, stack, rest[1])
            if method == 'PATCH':
                return self._mark_unhealthy(request, stack, rest[1])
        if rest == ['outputs'] and method == 'GET':
            return Response(200, {'outputs': []})
        raise HttpError(405, 'Method Not Allowed', f'the lab Heat double '
                        f'does not serve {method} {request.path}',
                        'HTTPMethodNotAllowed')

    # -- stacks ---------------------------------------------------------

    def _base(self, request: Request) -> str:
        tenant = request.path.strip('/').split('/')[1]
        return f'http://{request.host}/v1/{tenant}'

    def _redirect(self, request: Request, tree: StackTree, name_or_id: str,
                  rest: list[str]) -> Response:
        stack = tree.lookup(name_or_id)
        if stack is None:
            raise not_found(f'The Stack ({name_or_id}) could not be found.')
        location = '/'.join([render.stack_href(self._base(request), stack),
                             *rest])
        if request.query:
            location += '?' + urlencode(request.query, doseq=True)
        return Response(302, headers={'Location': location})

    def _status(self, stack: VStack) -> StackStatus:
        return self.statuses.get(stack.id, StackStatus())

    def _show_stack(self, request: Request, state: LabState,
                    tree: StackTree, stack: VStack) -> Response:
        outputs = request.param('resolve_outputs', 'true').lower() != 'false'
        body = render.stack_detail(self._base(request), tree, stack,
                                   self._status(stack), state, outputs)
        return Response(200, {'stack': body})

    def _list_stacks(self, request: Request, tree: StackTree) -> Response:
        nested = request.param('show_nested').lower() == 'true'
        found = [s for s in tree.stacks.values()
                 if (nested or s.parent_id is None)
                 and _matches(request, 'owner_id', s.parent_id)
                 and _matches(request, 'id', s.id)
                 and _matches(request, 'stack_name', s.name)]
        found = _page(request, found)
        base = self._base(request)
        return Response(200, {'stacks': [
            render.stack_summary(base, s, self._status(s)) for s in found]})

    def _update_stack(self, request: Request, tree: StackTree,
                      stack: VStack) -> Response:
        if stack is not tree.top:
            raise bad_request('the lab Heat double updates only the top '
                              f'stack {tree.top.name}/{tree.top.id}')
        if not isinstance(request.body, dict):
            raise bad_request('the update body must be a JSON object')
        with self._update_lock:
            self._run_update(request.body)
        return Response(202)

    def _run_update(self, body: dict) -> None:
        state = lab_state.load(self.state_path)
        try:
            todo = update.plan(state, update.desired_sizes(state, body))
        except update.BadRequest as e:
            raise bad_request(str(e)) from e
        LOG.info('stack %s update: remove %s, replace %s, add %s',
                 state.stack_id, todo.remove, todo.replace, todo.add)
        self.failures.clear()
        try:
            if not todo.empty:
                update.apply(todo, self.lab_factory(self.state_path))
                self._clear_unhealthy(todo.replace)
        except placement.NoValidHost as e:
            # As Heat: the resource whose server went to ERROR fails, and
            # the stack with it.
            LOG.warning('stack %s update failed: %s', state.stack_id, e)
            self.failures[(state.stack_id, e.resource)] = (
                'UPDATE_FAILED', str(e))
            self.statuses[state.stack_id] = StackStatus(
                'UPDATE', 'FAILED', f'Resource UPDATE failed: {e}',
                ids.now())
            return
        except Exception as e:  # Heat reports failures in the status
            LOG.exception('stack %s update failed', state.stack_id)
            self.statuses[state.stack_id] = StackStatus(
                'UPDATE', 'FAILED', f'lab update failed: {e}', ids.now())
            return
        self.statuses[state.stack_id] = StackStatus(
            'UPDATE', 'COMPLETE', 'Stack UPDATE completed successfully',
            ids.now())

    def _clear_unhealthy(self, names: list[str]) -> None:
        with lab_state.locked(self.state_path) as state:
            for host in state.hosts:
                if host.name in names:
                    host.unhealthy = False

    # -- resources ------------------------------------------------------

    def _list_resources(self, request: Request, tree: StackTree,
                        stack: VStack) -> Response:
        try:
            depth = int(request.param('nested_depth', '0') or 0)
        except ValueError as e:
            raise bad_request('nested_depth must be an integer') from e
        base = self._base(request)
        found = [render.resource_summary(base, tree, s, r)
                 for s, r in tree.walk(stack, depth)
                 if _matches(request, 'type', r.type)
                 and _matches(request, 'name', r.name)]
        return Response(200, {'resources': found})

    def _show_resource(self, request: Request, tree: StackTree,
                       stack: VStack, name: str) -> Response:
        resource = _resource(stack, name)
        body = render.resource_detail(self._base(request), tree, stack,
                                      resource)
        return Response(200, {'resource': body})

    def _mark_unhealthy(self, request: Request, stack: VStack,
                        name: str) -> Response:
        resource = _resource(stack, name)
        body = request.body if isinstance(request.body, dict) else {}
        if not isinstance(body.get('mark_unhealthy'), bool):
            raise bad_request('mark_unhealthy must be true or false')
        if resource.host is None:
            raise bad_request(f'the lab cannot replace {resource.type} '
                              f'{name}: mark a server, port, volume or '
                              'group member unhealthy')
        with lab_state.locked(self.state_path) as state:
            try:
                state.host(resource.host).unhealthy = body['mark_unhealthy']
            except KeyError as e:
                raise not_found(f'host {resource.host} is gone') from e
        LOG.info('stack %s: %s (%s) marked %s: %s', stack.id, name,
                 resource.host, 'unhealthy' if body['mark_unhealthy']
                 else 'healthy', body.get('resource_status_reason', ''))
        return Response(200)


def _resource(stack: VStack, name: str) -> stacks.VResource:
    try:
        return stack.resources[name]
    except KeyError:
        raise not_found(f'The Resource ({name}) could not be found in '
                        f'Stack {stack.name}.') from None


def _matches(request: Request, key: str, value: str | None) -> bool:
    wanted = request.query.get(key)
    return not wanted or value in wanted


def _page(request: Request, items: list[VStack]) -> list[VStack]:
    marker = request.param('marker')
    if marker:
        ids_ = [s.id for s in items]
        items = items[ids_.index(marker) + 1:] if marker in ids_ else []
    limit = request.param('limit')
    return items[:int(limit)] if limit.isdigit() else items
