import pytest

from kubernetes_mgmt.remote.retry import poll, wait_until


def test_wait_until_polls_until_the_condition_holds():
    calls = []

    def third_time() -> bool:
        calls.append(1)
        return len(calls) >= 3

    assert wait_until(third_time, deadline=5, first=0.001)
    assert len(calls) == 3


def test_wait_until_gives_up_after_the_deadline_with_a_last_try():
    calls = []
    assert not wait_until(lambda: calls.append(1), deadline=0.05,
                          first=0.01)
    assert len(calls) >= 2


def test_poll_returns_the_value_or_names_what_timed_out():
    assert poll(lambda: 'ready', deadline=1, what='x') == 'ready'
    with pytest.raises(TimeoutError, match='nodes Ready: not reached'):
        poll(lambda: None, deadline=0.05, what='nodes Ready')
