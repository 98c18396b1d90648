"""The stack's resource listing (``nested_depth=2``) as a searchable tree.

Heat lists nested resources flat; each row's ``stack`` link names the stack
that holds it (``stacks/<name>/<id>``) and a ``nested`` link the stack it
owns. Stacks are addressed as ``<name>/<id>`` afterwards so that heatclient
needs no extra lookup request per resource.
"""
from __future__ import annotations

from dataclasses import dataclass

from kubernetes_mgmt.errors import TopologyError

SERVER = 'OS::Nova::Server'
PORT = 'OS::Neutron::Port'
FLOATING_IP = 'OS::Neutron::FloatingIP'
SERVER_GROUP = 'OS::Nova::ServerGroup'


@dataclass(frozen=True)
class Row:
    name: str
    type: str
    physical_id: str
    stack: str                  # '<name>/<id>' of the holding stack
    nested: str | None          # '<name>/<id>' of its own nested stack
    created: str
    parent: str | None          # parent_resource: owner of ``stack``


def _ident(href: str) -> str:
    path = href.split('/stacks/', 1)[1]
    return '/'.join(path.split('/')[:2])


def _link(resource, rel: str) -> str | None:
    for link in getattr(resource, 'links', None) or ():
        if link.get('rel') == rel:
            return _ident(link['href'])
    return None


def to_row(resource) -> Row:
    """One heatclient ``Resource`` of a listing."""
    return Row(name=resource.resource_name, type=resource.resource_type,
               physical_id=resource.physical_resource_id or '',
               stack=_link(resource, 'stack') or '',
               nested=_link(resource, 'nested'),
               created=getattr(resource, 'creation_time', '') or '',
               parent=getattr(resource, 'parent_resource', None))


class Listing:
    """Rows grouped by stack, with the top stack found."""

    def __init__(self, stack_id: str, rows: list[Row]):
        self.stack_id = stack_id
        self.by_stack: dict[str, dict[str, Row]] = {}
        for row in rows:
            self.by_stack.setdefault(row.stack, {})[row.name] = row
        tops = {r.stack for r in rows if not r.parent}
        if len(tops) != 1:
            raise TopologyError(f'stack {stack_id}: cannot tell the top '
                                f'stack from the resource listing '
                                f'(found {sorted(tops) or "none"})')
        self.top = tops.pop()
        self._idents = {s.rsplit('/', 1)[1]: s for s in self.by_stack}

    def has_type(self, kind: str) -> bool:
        return any(row.type == kind for rows in self.by_stack.values()
                   for row in rows.values())

    def resources(self, stack: str) -> dict[str, Row]:
        return self.by_stack.get(stack, {})

    def find(self, stack: str, name: str) -> Row | None:
        return self.resources(stack).get(name)

    def require(self, stack: str, name: str, what: str) -> Row:
        row = self.find(stack, name)
        if row is None:
            raise TopologyError(f'{self.describe(stack)}: {what} {name!r} '
                                f'not found; {self.contents(stack)}')
        return row

    def nested_of(self, row: Row) -> str | None:
        """The stack a group or member resource owns."""
        return row.nested or self._idents.get(row.physical_id)

    def describe(self, stack: str) -> str:
        if stack == self.top:
            return f'stack {self.stack_id}'
        return f'stack {self.stack_id}, nested stack {stack}'

    def contents(self, stack: str) -> str:
        names = sorted(self.resources(stack))
        return f'resources are: {", ".join(names) or "(none)"}'
