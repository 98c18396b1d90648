"""The ChangeCurrentVnfPackage request that upgrades a cluster
(params/upgrade_request.py): what the operator is told before any host
is touched."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.params import upgrade_request


def body(**params) -> dict:
    return {'vnfdId': 'b1bb0ce7-ebca-4fa7-95ed-4840d7000003',
            'additionalParams': {'upgrade_type': 'RollingUpdate',
                                 'vdu_params': [], **params}}


def test_a_minimal_request_takes_one_worker_at_a_time():
    assert upgrade_request.parse(body()) == upgrade_request.UpgradeOptions(
        max_unavailable=1, drain_timeout=300)


def test_the_drivers_options_are_read():
    options = upgrade_request.parse(body(max_unavailable=3,
                                         drain_timeout=900))
    assert (options.max_unavailable, options.drain_timeout) == (3, 900)


def test_a_vdu_for_tacker_to_rebuild_is_refused_saying_why():
    request = body()
    request['additionalParams']['vdu_params'] = [{'vdu_id': 'workerNode'}]
    with pytest.raises(ValidationError) as refused:
        upgrade_request.parse(request)
    problem, = refused.value.problems
    assert problem.path == 'additionalParams.vdu_params'
    assert 'in place' in problem.message


def test_every_problem_is_named_by_its_field_at_once():
    request = body(max_unavailable=0, drain_timeout='5m')
    request['additionalParams']['upgrade_type'] = 'BlueGreen'
    del request['vnfdId']
    found = {p.path: p.message for p in upgrade_request.problems(request)}
    assert set(found) == {'vnfdId', 'additionalParams.upgrade_type',
                          'additionalParams.max_unavailable',
                          'additionalParams.drain_timeout'}
    assert 'RollingUpdate' in found['additionalParams.upgrade_type']
    assert 'between 1 and 1000' in found['additionalParams.max_unavailable']


def test_the_sample_request_is_accepted_once_filled_in():
    import json
    from pathlib import Path
    sample = (Path(__file__).resolve().parents[2] / 'samples' /
              'requests_v2' / 'change_vnfpkg_request.json').read_text()
    filled = json.loads(sample.replace('REPLACE_WITH_NEW_VNFD_ID',
                                       'b1bb0ce7-ebca-4fa7-95ed-4840d7000003'))
    assert upgrade_request.parse(filled) == upgrade_request.UpgradeOptions()
