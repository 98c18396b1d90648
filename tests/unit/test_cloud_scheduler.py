"""The emulated Nova's scheduler: servers booting side by side."""
import threading

import pytest

from kubernetes_mgmt_lab.cloud.api import ApiError
from kubernetes_mgmt_lab.cloud.compute import Compute
from kubernetes_mgmt_lab.cloud.records import Records

HOSTS = ['compute-0', 'compute-1', 'compute-2']


def _compute(tmp_path, policy):
    records = Records(str(tmp_path / 'records.json'))
    with records.changing() as data:
        data['server_groups']['g'] = {'id': 'g', 'policy': policy,
                                      'members': []}
        for i in range(4):
            data['servers'][f's{i}'] = {
                'id': f's{i}', 'OS-EXT-SRV-ATTR:host': None,
                'lab_claimed_host': None}
            data['server_groups']['g']['members'].append(f's{i}')
    return Compute(records, network=None, machines={},
                   compute_hosts=list(HOSTS), project_id='p')


def test_anti_affinity_holds_for_servers_scheduled_before_any_is_active(
        tmp_path):
    # Heat creates a group's servers at once: none is ACTIVE (has a host)
    # when the next is scheduled, yet the fourth must find no host.
    compute = _compute(tmp_path, 'anti-affinity')
    results: dict[str, object] = {}

    def boot(ident):
        try:
            results[ident] = compute._schedule(ident, 'g')
        except ApiError as exc:
            results[ident] = exc.kind

    threads = [threading.Thread(target=boot, args=(f's{i}',))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hosts = [r for r in results.values() if r in HOSTS]
    assert sorted(hosts) == HOSTS
    assert list(results.values()).count('NoValidHost') == 1


def test_a_failed_boot_gives_its_host_back(tmp_path):
    compute = _compute(tmp_path, 'anti-affinity')
    first = compute._schedule('s0', 'g')
    compute._fail('s0', ApiError(500, 'x', 'boot failed'))
    assert [compute._schedule(f's{i}', 'g') for i in (1, 2, 3)].count(
        first) == 1


def test_affinity_keeps_a_group_on_the_host_of_its_first_member(tmp_path):
    compute = _compute(tmp_path, 'affinity')
    assert {compute._schedule(f's{i}', 'g') for i in range(4)} == {
        'compute-0'}


def test_an_unknown_group_is_not_found(tmp_path):
    compute = _compute(tmp_path, 'anti-affinity')
    with pytest.raises(ApiError) as caught:
        compute._schedule('s0', 'gone')
    assert caught.value.status == 404
