"""The VNFD id (``descriptor_id``) of a package, in every place it is set.

Tacker takes the VNFD id from the top VNFD's VNF node; the VNF node type
repeats it as its default and in its valid_values, and Tacker refuses a
package whose places disagree (``vnf_property`` says how). ``package
build --descriptor-id`` sets every one of them.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kubernetes_mgmt.vnf_package import vnf_property
from kubernetes_mgmt.vnf_package.vnf_property import Site

PROPERTY = 'descriptor_id'
# The name build and the tests know; the same class as every property's.
DescriptorError = vnf_property.PropertyError


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be a VNFD id; None if it can."""
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return (f'--descriptor-id {value!r} is not a UUID (Tacker\'s v1 '
                'API takes the VNFD id only as a UUID, e.g. '
                f'{uuid.UUID(int=0x1234)})')
    if str(parsed) != value:
        return (f'--descriptor-id {value!r}: write the UUID as {parsed} '
                '(lower case, with hyphens)')
    return None


VNFD_ID = vnf_property.VnfProperty(
    name=PROPERTY, label='the VNFD id (descriptor_id)',
    option='--descriptor-id', metavar='ID', noun='id', problem=id_problem)


def sites(documents: Mapping[str, Any]) -> list[Site]:
    """Every site of the VNFD id in the parsed templates (by member)."""
    return vnf_property.sites(documents, VNFD_ID)


def settle(texts: Mapping[str, str], new_id: str | None
           ) -> tuple[dict[str, str], str | None]:
    """The templates (text by member) with every site set to ``new_id``
    when given, and the package's VNFD id. DescriptorError if the id is
    no UUID, no template sets it, or the sites name different ids."""
    return vnf_property.settle(texts, VNFD_ID, new_id)


def current(found: list[Site]) -> str | None:
    """The id Tacker would take: the VNF node's, else the default."""
    return vnf_property.current(found)


def problems(found: list[Site]) -> list[str]:
    """One line naming every site, if they do not agree."""
    return vnf_property.problems(found, VNFD_ID)

