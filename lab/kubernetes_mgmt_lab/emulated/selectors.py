"""Label and field selectors (``-l``, ``--field-selector``)."""
from __future__ import annotations

import re

from kubernetes_mgmt_lab.emulated import jsonpath


class SelectorError(ValueError):
    pass


def _terms(text: str) -> list[str]:
    terms, depth, cur = [], 0, ''
    for ch in text:
        if ch == ',' and depth == 0:
            terms.append(cur.strip())
            cur = ''
            continue
        depth += {'(': 1, ')': -1}.get(ch, 0)
        cur += ch
    if cur.strip():
        terms.append(cur.strip())
    return terms


def _label_term(term: str, labels: dict) -> bool:
    m = re.fullmatch(r'(\S+)\s+(in|notin)\s+\((.*)\)', term)
    if m:
        values = {v.strip() for v in m.group(3).split(',')}
        inside = labels.get(m.group(1)) in values
        return inside if m.group(2) == 'in' else not inside
    m = re.fullmatch(r'([^=!\s]+)\s*(==|=|!=)\s*(\S*)', term)
    if m:
        equal = labels.get(m.group(1)) == m.group(3)
        return not equal if m.group(2) == '!=' else equal
    if term.startswith('!'):
        return term[1:] not in labels
    if re.fullmatch(r'[A-Za-z0-9._/-]+', term):
        return term in labels
    raise SelectorError(f'unable to parse requirement: {term}')


def match_labels(selector: str | None, obj: dict) -> bool:
    if not selector:
        return True
    labels = obj['metadata'].get('labels') or {}
    return all(_label_term(t, labels) for t in _terms(selector))


def match_fields(selector: str | None, obj: dict) -> bool:
    if not selector:
        return True
    for term in _terms(selector):
        m = re.fullmatch(r'([\w.]+)\s*(==|=|!=)\s*(.*)', term)
        if not m:
            raise SelectorError(f'invalid selector: \'{term}\'; can\'t '
                                'understand \'{term}\'')
        found = jsonpath.values('.' + m.group(1), obj)
        value = str(found[0]) if found else ''
        if (value == m.group(3)) == (m.group(2) == '!='):
            return False
    return True
