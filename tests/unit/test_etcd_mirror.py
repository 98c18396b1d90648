"""The lab's etcd mirror tells a snapshot restore (etcd's marker is one
it wrote earlier: reload the objects from etcd) from its own write that
etcd committed after the client gave up during a quorum loss (a later
marker: the working copy is newer and stays)."""
from __future__ import annotations

import pytest

from kubernetes_mgmt_lab.emulated import etcd_mirror


@pytest.mark.parametrize('marker, late', [
    ('41.7', True),         # the write after the last one recorded
    ('41.9', True),
    ('40.6', False),        # the last one recorded (not reached here)
    ('12.3', False),        # a snapshot of earlier writes: a restore
    (None, False),
    ('garbage', False),
])
def test_a_late_write_of_the_lab_is_no_restore(marker, late):
    mirror = {'rv': '40.6', 'writes': 6}
    assert etcd_mirror._own_late_write(mirror, marker) is late


def test_adopting_a_late_write_rewrites_the_whole_working_copy_next():
    mirror = {'rv': '40.6', 'writes': 6}
    etcd_mirror._adopt(mirror, '41.7')
    assert mirror == {'rv': '41.7', 'writes': 7, 'stale': True}
