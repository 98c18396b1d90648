"""Namespace resolution and request validation of the CNF driver.

Everything here is decided before the cluster is asked anything: the
driver-level tests check against the API double that a refused request
made no API call at all.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kubernetes_mgmt.cnf import request_check as plan
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt_lab.kube_api import KubeApiDouble, cluster_admin
from kubernetes_mgmt_lab.kube_api.lcm import (
    InstantiateVnfRequest,
    runner_for,
)

DATA = Path(__file__).resolve().parent.parent / 'data' / 'cnf'
K8S = 'Files/kubernetes'


def params(*files: str, **extra) -> dict:
    return {'lcm-kubernetes-def-files': [f'{K8S}/{f}' for f in files],
            **extra}


def problems_of(exc: pytest.ExceptionInfo) -> str:
    return str(exc.value)


def test_additional_params_namespace_wins_over_default():
    chosen = plan.build(DATA, params('web.yaml', namespace='ns-x'))
    assert chosen.namespace.namespace == 'ns-x'
    assert chosen.namespace.source == 'additionalParams.namespace'


def test_additional_params_namespace_may_equal_the_manifests_one():
    chosen = plan.build(DATA, params('web-ns-a.yaml', namespace='ns-a'))
    assert chosen.namespace.namespace == 'ns-a'


def test_the_single_namespace_of_the_manifests_is_used():
    chosen = plan.build(DATA, params('web-ns-a.yaml'))
    assert chosen.namespace.namespace == 'ns-a'
    assert chosen.namespace.source == 'resource files'


def test_objects_without_namespace_join_the_manifests_namespace():
    chosen = plan.build(DATA, params('web.yaml', 'extra-ns-b.yaml'))
    assert chosen.namespace.namespace == 'ns-b'


def test_default_when_nothing_names_a_namespace():
    chosen = plan.build(DATA, params('web.yaml'))
    assert chosen.namespace.namespace == 'default'
    assert chosen.namespace.source == 'default'


def test_mixed_namespaces_are_refused_naming_files_and_namespaces():
    with pytest.raises(ValidationError) as exc:
        plan.build(DATA, params('web-ns-a.yaml', 'extra-ns-b.yaml'))
    text = problems_of(exc)
    assert 'additionalParams.lcm-kubernetes-def-files' in text
    assert "'ns-a'" in text and "'ns-b'" in text
    assert f'{K8S}/web-ns-a.yaml' in text
    assert f'{K8S}/extra-ns-b.yaml' in text
    assert 'ConfigMap/extra' in text


def test_manifests_contradicting_additional_params_are_refused():
    with pytest.raises(ValidationError) as exc:
        plan.build(DATA, params('web-ns-a.yaml', namespace='ns-b'))
    text = problems_of(exc)
    assert "additionalParams.namespace is 'ns-b'" in text
    assert 'Deployment/web' in text and "'ns-a'" in text


def test_cluster_scoped_objects_do_not_count():
    chosen = plan.build(DATA, params('web-ns-a.yaml', 'cluster-scoped.yaml'))
    assert chosen.namespace.namespace == 'ns-a'
    # ... and they keep no namespace when sent.
    bodies = chosen.bodies(lambda m: m.kind not in (
        'ClusterRole', 'StorageClass'))
    cluster_role = next(b for b in bodies if b['kind'] == 'ClusterRole')
    assert cluster_role['metadata']['namespace'] == 'somewhere-else'


@pytest.mark.parametrize('value', ['Ns-A', 'ns_a', '-ns', 'ns-', 'a' * 64,
                                   'ns.a', 7])
def test_invalid_namespace_names_the_field(value):
    with pytest.raises(ValidationError) as exc:
        plan.build(DATA, params('web.yaml', namespace=value))
    assert exc.value.problems[0].path == 'additionalParams.namespace'


def test_longest_valid_namespace_is_accepted():
    name = 'a' + '-' * 61 + 'b'
    assert plan.build(DATA, params('web.yaml', namespace=name)
                      ).namespace.namespace == name


def test_invalid_namespace_in_a_manifest_names_the_file():
    with pytest.raises(ValidationError) as exc:
        plan.build(DATA, params('bad-namespace.yaml'))
    text = problems_of(exc)
    assert 'bad-namespace.yaml' in text and 'metadata.namespace' in text
    assert 'Not_A_Label' in text


@pytest.mark.parametrize('path, says', [
    ('../../unit/test_cnf_namespace.py', 'outside the VNF package'),
    ('/etc/hostname', 'outside the VNF package'),
    ('https://example.com/web.yaml', 'is a URL'),
    ('Files/kubernetes/missing.yaml', 'is not a file'),
])
def test_files_must_be_inside_the_package(path, says):
    with pytest.raises(ValidationError) as exc:
        plan.build(DATA, {'lcm-kubernetes-def-files': [path]})
    problem = exc.value.problems[0]
    assert problem.path == 'additionalParams.lcm-kubernetes-def-files[0]'
    assert says in problem.message


def test_symlink_out_of_the_package_is_refused(tmp_path):
    package = tmp_path / 'pkg'
    shutil.copytree(DATA, package)
    outside = tmp_path / 'outside.yaml'
    outside.write_text((DATA / K8S / 'web.yaml').read_text())
    (package / K8S / 'link.yaml').symlink_to(outside)
    with pytest.raises(ValidationError, match='outside the VNF package'):
        plan.build(package, params('link.yaml'))


def test_documents_must_be_objects():
    with pytest.raises(ValidationError) as exc:
        plan.build(DATA, params('not-an-object.yaml'))
    assert 'document 2 has no kind' in problems_of(exc)


def test_files_are_required():
    with pytest.raises(ValidationError) as exc:
        plan.build(DATA, {'namespace': 'ns-a'})
    assert exc.value.problems[0].path == \
        'additionalParams.lcm-kubernetes-def-files'


def test_an_object_defined_twice_is_refused():
    with pytest.raises(ValidationError, match='defined twice'):
        plan.build(DATA, params('web.yaml', 'web-ns-a.yaml'))


def test_every_problem_is_reported_at_once():
    with pytest.raises(ValidationError) as exc:
        plan.build(DATA, {'lcm-kubernetes-def-files': [
            f'{K8S}/missing.yaml', f'{K8S}/not-an-object.yaml'],
            'namespace': 'Bad', 'use_helm': True})
    paths = {p.path for p in exc.value.problems}
    assert paths == {'additionalParams.use_helm',
                     'additionalParams.lcm-kubernetes-def-files[0]',
                     'additionalParams.lcm-kubernetes-def-files[1]',
                     'additionalParams.namespace'}


def test_objects_are_created_in_dependency_order():
    chosen = plan.build(DATA, params('web.yaml', 'workloads.yaml'))
    kinds = [m.kind for m in chosen.manifests]
    assert kinds.index('ServiceAccount') < kinds.index('StatefulSet')
    assert kinds.index('ConfigMap') < kinds.index('Deployment')
    assert kinds.index('Role') < kinds.index('RoleBinding')


# -- through the driver, against the API double ------------------------

@pytest.fixture
def lab():
    with KubeApiDouble(tls=True) as double:
        token = double.add_token('admin-token', cluster_admin())
        yield double, runner_for(double.access_info(token),
                                 {'vnfd-cnf': DATA})


@pytest.mark.parametrize('request_params, field', [
    (params('web-ns-a.yaml', 'extra-ns-b.yaml'),
     'additionalParams.lcm-kubernetes-def-files'),
    (params('web-ns-a.yaml', namespace='ns-b'),
     'additionalParams.lcm-kubernetes-def-files'),
    (params('web.yaml', namespace='NS'), 'additionalParams.namespace'),
    (params('missing.yaml'), 'additionalParams.lcm-kubernetes-def-files[0]'),
])
def test_refused_requests_make_no_api_call(lab, request_params, field):
    double, lcm = lab
    instance = lcm.new_instance('vnfd-cnf', additional_params=request_params)
    with pytest.raises(ValidationError) as exc:
        lcm.instantiate(instance, InstantiateVnfRequest(
            'simple', request_params))
    assert field in {p.path for p in exc.value.problems}
    assert double.requests == []
    assert 'namespace' not in instance.vnf_metadata
    assert lcm.store.rows == {}


def test_driver_stores_the_chosen_namespace(lab):
    double, lcm = lab
    request_params = params('web-ns-a.yaml')
    instance = lcm.new_instance('vnfd-cnf', additional_params=request_params)
    lcm.instantiate(instance, InstantiateVnfRequest('simple',
                                                    request_params))
    assert instance.vnf_metadata['namespace'] == 'ns-a'
    assert double.names('Deployment', 'ns-a') == ['web']
    assert double.namespaces_in_use(('Deployment', 'Service', 'ConfigMap',
                                     'Pod')) == {'ns-a'}
