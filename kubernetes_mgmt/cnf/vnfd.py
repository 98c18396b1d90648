"""What the driver reads from a VNFD (flavour) dict.

VDUs (``tosca.nodes.nfv.Vdu.Compute``) map to workloads by their
``properties.name`` -- the same rule Tacker's own Kubernetes driver
applies. Scaling: ``tosca.policies.nfv.ScalingAspects`` gives an
aspect's first step delta id, ``VduScalingAspectDeltas`` its VDUs and
the number of instances per step, ``VduInitialDelta`` the instances at
level 0 and ``InstantiationLevels`` the level to start at.
"""
from __future__ import annotations

from collections.abc import Iterator

VDU_TYPE = 'tosca.nodes.nfv.Vdu.Compute'
ASPECTS = 'tosca.policies.nfv.ScalingAspects'
ASPECT_DELTAS = 'tosca.policies.nfv.VduScalingAspectDeltas'
INITIAL_DELTA = 'tosca.policies.nfv.VduInitialDelta'
LEVELS = 'tosca.policies.nfv.InstantiationLevels'


def _topology(vnfd: dict) -> dict:
    return (vnfd or {}).get('topology_template') or {}


def vdu_nodes(vnfd: dict) -> dict[str, dict]:
    nodes = _topology(vnfd).get('node_templates') or {}
    return {vdu_id: node for vdu_id, node in nodes.items()
            if isinstance(node, dict) and node.get('type') == VDU_TYPE}


def vdu_id_by_name(vnfd: dict) -> dict[str, str]:
    """Workload name (VDU property ``name``) -> VDU id."""
    return {(node.get('properties') or {}).get('name'): vdu_id
            for vdu_id, node in vdu_nodes(vnfd).items()
            if (node.get('properties') or {}).get('name')}


def _policies(vnfd: dict, policy_type: str) -> Iterator[dict]:
    policies = _topology(vnfd).get('policies') or []
    if isinstance(policies, dict):          # a map is valid TOSCA too
        policies = [{k: v} for k, v in policies.items()]
    for entry in policies:
        for policy in (entry or {}).values():
            if isinstance(policy, dict) and policy.get('type') == policy_type:
                yield policy


def _step_delta_id(vnfd: dict, aspect_id: str) -> str | None:
    for policy in _policies(vnfd, ASPECTS):
        aspect = ((policy.get('properties') or {}).get('aspects') or {}).get(
            aspect_id)
        if aspect and aspect.get('step_deltas'):
            return aspect['step_deltas'][0]   # Tacker: first one wins
    return None


def _aspect_deltas(vnfd: dict, aspect_id: str) -> dict | None:
    for policy in _policies(vnfd, ASPECT_DELTAS):
        if (policy.get('properties') or {}).get('aspect') == aspect_id:
            return policy
    return None


def aspect_vdu_defs(vnfd: dict, aspect_id: str) -> dict[str, dict]:
    """VDU id -> node template of the VDUs an aspect scales (the shape
    of Tacker's ``policy['vdu_defs']``)."""
    policy = _aspect_deltas(vnfd, aspect_id) or {}
    nodes = vdu_nodes(vnfd)
    return {vdu: nodes[vdu] for vdu in policy.get('targets') or []
            if vdu in nodes}


def aspect_delta(vnfd: dict, aspect_id: str) -> int:
    """Instances added or removed per step (Tacker's ``delta_num``)."""
    policy = _aspect_deltas(vnfd, aspect_id)
    delta_id = _step_delta_id(vnfd, aspect_id)
    if policy is None or delta_id is None:
        return 1                                 # as Tacker defaults
    deltas = (policy.get('properties') or {}).get('deltas') or {}
    return int((deltas.get(delta_id) or {}).get('number_of_instances', 1))


def _initial_delta(vnfd: dict, vdu_id: str) -> int | None:
    for policy in _policies(vnfd, INITIAL_DELTA):
        if vdu_id in (policy.get('targets') or []):
            initial = (policy.get('properties') or {}).get(
                'initial_delta') or {}
            return int(initial.get('number_of_instances', 1))
    return None


def _levels(vnfd: dict, level_id: str | None) -> dict[str, int]:
    """aspect id -> scale level of an instantiation level."""
    for policy in _policies(vnfd, LEVELS):
        props = policy.get('properties') or {}
        chosen = level_id or props.get('default_level')
        level = (props.get('levels') or {}).get(chosen) or {}
        return {aspect: int((info or {}).get('scale_level', 0))
                for aspect, info in (level.get('scale_info') or {}).items()}
    return {}


def initial_replicas(vnfd: dict, level_id: str | None) -> dict[str, int]:
    """Workload name -> replicas at instantiation: initial delta plus
    the aspect's step delta times the level's scale level."""
    levels = _levels(vnfd, level_id)
    replicas: dict[str, int] = {}
    for aspect_id in {(p.get('properties') or {}).get('aspect')
                      for p in _policies(vnfd, ASPECT_DELTAS)}:
        for vdu_id, node in aspect_vdu_defs(vnfd, aspect_id).items():
            initial = _initial_delta(vnfd, vdu_id)
            name = (node.get('properties') or {}).get('name')
            if initial is None or not name:
                continue
            replicas[name] = initial + aspect_delta(vnfd, aspect_id) * \
                levels.get(aspect_id, 0)
    return replicas
