"""RBAC as kube-apiserver evaluates it from the stored objects: the
rules of the ClusterRoles bound by ClusterRoleBindings, and of the Roles
and ClusterRoles bound by RoleBindings in the request's namespace, to a
subject matching the caller (User, Group, ServiceAccount)."""
from __future__ import annotations

from kubernetes_mgmt_lab.kube_api.rbac import Attributes, Identity
from kubernetes_mgmt_lab.kube_api.store import Store

SA_PREFIX = 'system:serviceaccount:'


def _subject_matches(subject: dict, identity: Identity) -> bool:
    kind, name = subject.get('kind'), subject.get('name')
    if kind == 'User':
        return name == identity.user
    if kind == 'Group':
        return name in identity.groups
    if kind == 'ServiceAccount':
        return identity.user == \
            f'{SA_PREFIX}{subject.get("namespace")}:{name}'
    return False


def _rule_allows(rule: dict, attrs: Attributes) -> bool:
    def among(values, value):
        values = values or []
        return '*' in values or value in values

    names = rule.get('resourceNames') or []
    return (among(rule.get('apiGroups'), attrs.group)
            and among(rule.get('resources'), attrs.resource)
            and among(rule.get('verbs'), attrs.verb)
            and (not names or attrs.name in names))


def _role_rules(store: Store, ref: dict, namespace: str | None
                ) -> list[dict]:
    if ref.get('kind') == 'ClusterRole':
        role = store.get(('ClusterRole', '', ref.get('name', '')))
    else:
        role = store.get(('Role', namespace or '', ref.get('name', '')))
    return list((role or {}).get('rules') or [])


def _bound(binding: dict, identity: Identity) -> bool:
    return any(_subject_matches(s, identity)
               for s in binding.get('subjects') or [])


def allows(store: Store, identity: Identity, attrs: Attributes) -> bool:
    """Does a binding stored in ``store`` grant the request?"""
    grants = [_role_rules(store, b.get('roleRef') or {}, None)
              for b in store.of_kind('ClusterRoleBinding')
              if _bound(b, identity)]
    if attrs.namespace:
        grants += [_role_rules(store, b.get('roleRef') or {},
                               attrs.namespace)
                   for b in store.of_kind('RoleBinding', attrs.namespace)
                   if _bound(b, identity)]
    return any(_rule_allows(rule, attrs)
               for rules in grants for rule in rules)
