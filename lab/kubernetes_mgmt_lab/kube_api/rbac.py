"""Who a caller is, and what its own rules let it do.

An :class:`Identity` is either cluster-admin, or a user (with groups)
whose own grant is at most one set of rules in one namespace; what the
cluster's stored bindings grant besides is ``authorizer``'s. Discovery
paths are
open to every authenticated user (``system:discovery`` in a real
cluster), and so is SelfSubjectAccessReview (``system:basic-user``); a
node (``system:node:NAME`` in ``system:nodes``) reads its own Node, as the
Node authorizer lets it.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]        # 'deployments', 'deployments/scale'
    verbs: tuple[str, ...]

    def allows(self, group: str, resource: str, verb: str) -> bool:
        return (_match(self.api_groups, group)
                and _match(self.resources, resource)
                and _match(self.verbs, verb))


def _match(allowed: tuple[str, ...], value: str) -> bool:
    return '*' in allowed or value in allowed


@dataclass(frozen=True)
class Identity:
    user: str
    cluster_admin: bool = False
    namespace: str | None = None      # where the Role is bound
    rules: tuple[Rule, ...] = field(default=())
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Attributes:
    """What a request does, as the RBAC authorizer sees it."""

    verb: str
    group: str
    resource: str                     # with '/subresource' when there is
    namespace: str | None
    name: str | None = None


def allows(identity: Identity, attrs: Attributes) -> bool:
    if identity.cluster_admin:
        return True
    if attrs.group == 'authorization.k8s.io' and \
            attrs.resource == 'selfsubjectaccessreviews':
        return attrs.verb == 'create'
    if _own_node(identity, attrs):
        return True
    if identity.namespace is None or attrs.namespace != identity.namespace:
        return False
    return any(rule.allows(attrs.group, attrs.resource, attrs.verb)
               for rule in identity.rules)


NODES_GROUP = 'system:nodes'
NODE_USER_PREFIX = 'system:node:'


def _own_node(identity: Identity, attrs: Attributes) -> bool:
    """kube-apiserver's Node authorizer, the part kubelets' credentials
    are used for here: a node reads its own Node object."""
    return (NODES_GROUP in identity.groups
            and identity.user.startswith(NODE_USER_PREFIX)
            and attrs.verb == 'get' and attrs.group == ''
            and attrs.resource == 'nodes'
            and attrs.name == identity.user[len(NODE_USER_PREFIX):])


def forbidden_message(identity: Identity, attrs: Attributes) -> str:
    """The message kube-apiserver writes into a 403 Status."""
    resource, _, sub = attrs.resource.partition('/')
    group = f'.{attrs.group}' if attrs.group else ''
    named = f' "{attrs.name}"' if attrs.name else ''
    scope = (f' in the namespace "{attrs.namespace}"' if attrs.namespace
             else ' at the cluster scope')
    sub_text = f'/{sub}' if sub else ''
    return (f'{resource}{group}{named} is forbidden: User "{identity.user}" '
            f'cannot {attrs.verb} resource "{resource}{sub_text}" in API '
            f'group "{attrs.group}"{scope}')


_WORKLOADS = ('deployments', 'statefulsets', 'replicasets', 'daemonsets')
_OBJECTS = ('get', 'create', 'delete')

# The Role README.rst documents for the kubernetes-namespaced driver:
# the verbs it uses, in one namespace, nothing cluster-wide.
CNF_DRIVER_RULES: tuple[Rule, ...] = (
    Rule(('',), ('pods',), ('get', 'list', 'create', 'delete')),
    Rule(('',), ('services', 'configmaps', 'secrets', 'serviceaccounts',
                 'persistentvolumeclaims'), _OBJECTS),
    Rule(('apps',), _WORKLOADS, _OBJECTS),
    Rule(('apps',), tuple(f'{w}/scale' for w in _WORKLOADS[:3]),
         ('get', 'patch')),
    Rule(('batch',), ('jobs', 'cronjobs'), _OBJECTS),
    Rule(('rbac.authorization.k8s.io',), ('roles', 'rolebindings'),
         _OBJECTS),
)


def namespace_role(user: str, namespace: str,
                   rules: tuple[Rule, ...] = CNF_DRIVER_RULES) -> Identity:
    return Identity(user=user, namespace=namespace, rules=rules)


def cluster_admin(user: str = 'kubernetes-admin') -> Identity:
    return Identity(user=user, cluster_admin=True)


MASTERS_GROUP = 'system:masters'


def from_certificate(cert: dict) -> Identity:
    """Who a verified client certificate names (``ssl`` peer-cert dict):
    its CN is the user, its O the groups; system:masters is
    cluster-admin in every cluster, other groups have what the stored
    bindings give them."""
    fields = [pair for rdn in cert.get('subject', ()) for pair in rdn]
    user = next((v for k, v in fields if k == 'commonName'), '')
    groups = tuple(sorted({v for k, v in fields
                           if k == 'organizationName'}))
    return Identity(user=user, cluster_admin=MASTERS_GROUP in groups,
                    groups=groups)
