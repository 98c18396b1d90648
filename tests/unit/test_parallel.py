import threading

import pytest

from kubernetes_mgmt.errors import CommandFailed
from kubernetes_mgmt.orchestration.parallel import PhaseFailed, for_each


def test_runs_concurrently_up_to_the_bound_and_keeps_order():
    active = 0
    peak = 0
    lock = threading.Lock()
    gate = threading.Barrier(3, timeout=5)

    def step(n):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        gate.wait()  # only passes if 3 run at the same time
        with lock:
            active -= 1
        return n * 10

    assert for_each([1, 2, 3, 4, 5, 6], step, phase='p', label=str,
                    parallel=3) == [10, 20, 30, 40, 50, 60]
    assert peak == 3


def test_every_host_is_attempted_and_every_failure_reported():
    seen = []

    def step(name):
        seen.append(name)
        if name == 'w1':
            raise CommandFailed('w1', 'join', 1, '', 'token expired')
        if name == 'w3':
            raise ValueError('bad thing')
        return name

    with pytest.raises(PhaseFailed) as info:
        for_each(['w1', 'w2', 'w3'], step, phase='join workers', label=str,
                 parallel=2)
    assert sorted(seen) == ['w1', 'w2', 'w3']
    message = str(info.value)
    assert 'join workers failed on 2 host(s)' in message
    assert '[w1] join: exited with status 1: token expired' in message
    assert '[w3] bad thing' in message
