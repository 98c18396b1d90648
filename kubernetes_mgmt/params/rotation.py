"""New registry configuration for a cluster that exists: a scale or heal
request's ``additionalParams.private_registries``.

A registry's password or CA changes during a cluster's life, and later
operations read the parameters stored at instantiate. A scale or heal
request may therefore carry the whole ``private_registries`` list anew:
it is checked as at instantiate, then replaces the stored list (an empty
list removes every registry), so this operation and every later one use
it.
"""
from __future__ import annotations

import copy
from typing import Any

from jsonschema import Draft202012Validator

from kubernetes_mgmt.errors import Problem, ValidationError
from kubernetes_mgmt.params import registries
from kubernetes_mgmt.params.casing import snake_key
from kubernetes_mgmt.params.paths import render, sort_key
from kubernetes_mgmt.params.schema import PARAM_KEY, Finding, findings

KEY = registries.REGISTRIES_KEY

_VALIDATOR = Draft202012Validator(registries.REGISTRIES)


def registry_findings(additional: Any) -> list[Finding]:
    """Problems of the registries ``additional`` (a scale or heal
    request's additionalParams) gives, paths relative to it."""
    if not isinstance(additional, dict) or KEY not in additional:
        return []
    value = additional[KEY]
    found = [((KEY, *path), message)
             for path, message in findings(_VALIDATOR, value)]
    return found or registries.findings({KEY: value})


def new_registries(additional: Any, base: str = 'additionalParams'
                   ) -> list[dict] | None:
    """The registries a scale or heal request's additionalParams give
    (None: it gives none, the stored ones stay). ValidationError lists
    every problem, paths under ``base``, before any host is touched. Its
    secrets are masked once the parameters it goes into are read
    (``validate.read_stored_params``)."""
    if not isinstance(additional, dict) or KEY not in additional:
        return None
    found = registry_findings(additional)
    if found:
        found.sort(key=lambda f: sort_key(f[0]))
        raise ValidationError([Problem(render(base, path), message)
                               for path, message in dict.fromkeys(found)])
    return additional[KEY]


def with_registries(stored: dict, new: list[dict]) -> dict:
    """``stored`` (an instantiate request's additionalParams) with its
    registries replaced by ``new``; whatever spelling the stored list
    had (older Tacker releases kept camelCase keys) goes."""
    result = copy.deepcopy(stored)
    param_key = next((k for k in result if snake_key(k) == PARAM_KEY),
                     PARAM_KEY)
    param = result.get(param_key)
    if not isinstance(param, dict):
        raise ValidationError([Problem(
            render('additionalParams', (PARAM_KEY,)),
            'the stored instantiate parameters have none: there are no '
            'registries to replace')])
    for key in [k for k in param if snake_key(k) == KEY]:
        del param[key]
    param[KEY] = copy.deepcopy(new)
    return result
