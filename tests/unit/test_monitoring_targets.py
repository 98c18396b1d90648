"""The node exporters' file for Prometheus: written whole, one group per
node Tacker records as a VNFC, removed at terminate."""
from __future__ import annotations

import json
import os

from kubernetes_mgmt.monitoring import targets

INSTANCE = 'inst-1'


def members():
    return [targets.Member('s-w1', 'worker-1', 'worker', '10.0.0.21'),
            targets.Member('s-m0', 'master-0', 'master', '10.0.0.10'),
            targets.Member('s-new', 'worker-2', 'worker', '10.0.0.22')]


def test_each_recorded_vnfc_is_a_target_named_for_tacker():
    groups = targets.entries(INSTANCE, members(),
                             {'s-m0': 'masterNode-s-m0',
                              's-w1': 'workerNode-s-w1'}, 9100)
    assert groups == [
        {'targets': ['10.0.0.10:9100'],
         'labels': {'vnf_instance_id': INSTANCE,
                    'vnfc_info_id': 'masterNode-s-m0',
                    'node': 'master-0', 'role': 'master'}},
        {'targets': ['10.0.0.21:9100'],
         'labels': {'vnf_instance_id': INSTANCE,
                    'vnfc_info_id': 'workerNode-s-w1',
                    'node': 'worker-1', 'role': 'worker'}}]


def test_the_file_is_replaced_whole_and_removed(tmp_path):
    directory = str(tmp_path / 'sd')
    first = targets.write(directory, INSTANCE, [{'targets': ['a:1']}])
    assert json.loads(first.read_text()) == [{'targets': ['a:1']}]
    assert oct(first.stat().st_mode & 0o777) == '0o644'
    targets.write(directory, INSTANCE, [])
    assert json.loads(first.read_text()) == []
    assert os.listdir(directory) == [first.name]    # no temporary left
    targets.remove(directory, INSTANCE)
    targets.remove(directory, INSTANCE)             # again: nothing to do
    assert os.listdir(directory) == []
