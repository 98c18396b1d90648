"""The upgrade rules between Kubernetes versions (params/versions.py):
what an operator is told before any host is touched."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.params.versions import (
    Minor,
    kubelet_problem,
    upgrade_problem,
)

WHERE = 'additionalParams.k8s_cluster_installation_param.kubernetes_version'


@pytest.mark.parametrize('text, minor', [
    ('1.37', Minor(1, 37)), ('v1.37.2', Minor(1, 37)),
    ('1.36.4-1.1', Minor(1, 36)), (' 1.100 ', Minor(1, 100)),
])
def test_the_minor_is_read_from_every_form_a_version_takes(text, minor):
    assert Minor.parse(text) == minor


@pytest.mark.parametrize('text', ['', '1', 'one.two', '1.37.x', None, 137])
def test_what_is_no_version_is_none(text):
    assert Minor.parse(text) is None


@pytest.mark.parametrize('current, target', [
    ('1.36', '1.37'), ('v1.36.9', '1.37'), ('1.37', '1.37')])
def test_one_minor_up_or_the_same_is_allowed(current, target):
    assert upgrade_problem(current, target, WHERE) is None


def test_a_skipped_minor_is_refused_naming_both_and_the_next_step():
    problem = upgrade_problem('1.35', '1.37', WHERE)
    assert problem.path == WHERE
    assert '1.35 to 1.37 skips 1 minor version(s)' in problem.message
    assert 'to 1.36 first' in problem.message


def test_a_downgrade_is_refused_naming_both():
    problem = upgrade_problem('v1.37.1', '1.36', WHERE)
    assert problem.message.startswith('1.36 is older than the cluster\'s '
                                      '1.37')


def test_a_major_change_and_nonsense_are_refused():
    assert 'major' in upgrade_problem('1.37', '2.0', WHERE).message
    assert 'not a Kubernetes version' in upgrade_problem(
        '1.37', 'latest', WHERE).message
    assert 'not known' in upgrade_problem('', '1.37', WHERE).message


def test_a_kubelet_newer_than_the_api_server_is_refused():
    assert kubelet_problem('worker-0', '1.36', '1.37') is None
    assert kubelet_problem('worker-0', '1.37', '1.37') is None
    problem = kubelet_problem('worker-0', 'v1.38.0', '1.37.2')
    assert problem.path == 'worker-0'
    assert 'kubelet 1.38 would be newer than the API server 1.37' in \
        problem.message


@pytest.mark.parametrize('text, minor', [
    ('1.37', Minor(1, 37)), ('1.100', Minor(1, 100)), ('1.0', None),
    ('1.9', None), ('v1.37', None), ('1.37.2', None), (' 1.37', None),
    (1.37, None), (None, None)])
def test_only_a_minor_written_as_one_is_exact(text, minor):
    # A package's software_version '1.0' (the v1 sample's) names none.
    assert Minor.exact(text) == minor
