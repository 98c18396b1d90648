"""``package verify`` reads the user data class (never runs it): its base
must be one of Tacker's user data bases, reached through the package's
own modules if need be, and the methods Tacker calls must be there and
take the arguments Tacker passes."""
from __future__ import annotations

import hashlib
import json
import textwrap
import zipfile
from pathlib import Path

import pytest

from kubernetes_mgmt.vnf_package import layout, meta
from kubernetes_mgmt.vnf_package.build import BuildOptions, build
from kubernetes_mgmt.vnf_package.verify import verify

V1_FILE = 'UserData/k8s_cluster_user_data.py'
V2_FILE = 'UserData/kubernetes_mgmt_v2_user_data.py'
CLASS = 'KubernetesClusterUserData'
V1_WHERE = f'complex_kubernetes_param_file.json: {V1_FILE} ({CLASS}): '
V2_WHERE = f'instantiate_complex_request.json: {V2_FILE} ({CLASS}): '
V1_BASE = 'tacker.vnfm.lcm_user_data.abstract_user_data'
V2_BASE = 'tacker.sol_refactored.infra_drivers.openstack'
V1_ARGS = 'base_hot_dict, vnfd_dict, inst_req_info, grant_info'
V2_ARGS = 'req, inst, grant_req, grant, tmp_csar_dir'


@pytest.fixture(scope='module')
def v2_package(tmp_path_factory, sol001_dir) -> Path:
    output = tmp_path_factory.mktemp('csar-v2') / 'v2.zip'
    build(BuildOptions(output=output, sol001_dir=sol001_dir, v2=True))
    return output


def source(text: str) -> bytes:
    return textwrap.dedent(text).lstrip().encode()


def problems_with(package: Path, tmp_path: Path, files: dict[str, bytes],
                  requests: tuple[Path, ...] | list[Path] = ()) -> list[str]:
    """verify's problems for the package with ``files`` replaced or
    added, every file hashed in TOSCA.meta again."""
    with zipfile.ZipFile(package) as archive:
        members = {n: archive.read(n) for n in archive.namelist()}
    members.update(files)
    parsed = meta.parse(members[layout.TOSCA_META].decode())
    parsed.artifacts = [
        meta.Artifact(n, 'SHA-256', hashlib.sha256(members[n]).hexdigest())
        for n in sorted(members)
        if not n.startswith(('Definitions/', 'TOSCA-Metadata/'))]
    members[layout.TOSCA_META] = meta.render(parsed).encode()
    target = tmp_path / 'package.zip'
    with zipfile.ZipFile(target, 'w') as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return verify(target, requests).problems


GOOD_V1 = f'''
    from {V1_BASE} import AbstractUserData


    class {CLASS}(AbstractUserData):
        @staticmethod
        def instantiate(base_hot_dict=None, vnfd_dict=None,
                        inst_req_info=None, grant_info=None):
            return {{}}
'''


def test_a_minimal_v1_class_is_accepted(built_package, tmp_path):
    assert problems_with(built_package, tmp_path,
                         {V1_FILE: source(GOOD_V1)}) == []


def test_a_class_without_tackers_base_is_reported(built_package, tmp_path):
    text = GOOD_V1.replace('(AbstractUserData)', '(dict, Unknown)')
    assert problems_with(built_package, tmp_path,
                         {V1_FILE: source(text)}) == [
        f"{V1_WHERE}{CLASS} does not derive from Tacker's user data base "
        f'{V1_BASE}.AbstractUserData (its bases: dict, Unknown)']


def test_a_class_without_instantiate_is_reported(built_package, tmp_path):
    text = GOOD_V1.replace('def instantiate', 'def instantiate_later')
    assert problems_with(built_package, tmp_path,
                         {V1_FILE: source(text)}) == [
        f"{V1_WHERE}{CLASS} does not implement instantiate, which "
        "Tacker's v1 API calls"]


def test_methods_that_cannot_take_tackers_arguments(built_package,
                                                    tmp_path):
    text = GOOD_V1.replace(
        'base_hot_dict=None, vnfd_dict=None,', 'base_hot_dict, vnfd_dict,'
    ).replace('inst_req_info=None, grant_info=None',
              'inst_req_info, *, grant') + \
        '''
        @staticmethod
        def heal(base_hot_dict, vnfd_dict, heal_vnf_request):
            return {}
    '''
    assert problems_with(built_package, tmp_path,
                         {V1_FILE: source(text)}) == [
        f'{V1_WHERE}{V1_FILE}:6: {CLASS}.instantiate(base_hot_dict, '
        'vnfd_dict, inst_req_info) cannot take the 4 arguments Tacker '
        f'passes by position ({V1_ARGS})',
        f'{V1_WHERE}{V1_FILE}:11: {CLASS}.heal(base_hot_dict, vnfd_dict, '
        'heal_vnf_request) cannot take the 7 arguments Tacker passes by '
        'position (base_hot_dict, vnfd_dict, heal_vnf_request, '
        'vnf_instance, inst_vnf_info, param, vnfc_resource_info)']


def test_a_syntax_error_is_reported_with_its_line(built_package, tmp_path):
    text = GOOD_V1 + '\n        return {\n'
    [problem] = problems_with(built_package, tmp_path,
                              {V1_FILE: source(text)})
    assert problem.startswith(f'{V1_WHERE}{V1_FILE}:10: ')


def test_a_base_in_another_module_of_the_package(built_package, tmp_path):
    base = GOOD_V1.replace(f'class {CLASS}(', 'class Base(').replace(
        '@staticmethod', '@classmethod').replace(
        'def instantiate(', 'def instantiate(cls, ')
    user_data = f'''
        from .base import Base as Renamed
        import UserData.base

        Alias = UserData.base.Base


        class {CLASS}(Alias, Renamed):
            """Everything from the base."""
    '''
    assert problems_with(built_package, tmp_path, {
        'UserData/base.py': source(base),
        V1_FILE: source(user_data)}) == []
    # The module the base is in must be in the package.
    assert problems_with(built_package, tmp_path, {
        V1_FILE: source(user_data)}) == [
        f"{V1_WHERE}{CLASS} does not derive from Tacker's user data base "
        f'{V1_BASE}.AbstractUserData (its bases: Alias, Renamed)',
        f'{V1_WHERE}{V1_FILE}:1: imports UserData.base, which is not in '
        'the package',
        f'{V1_WHERE}{V1_FILE}:2: imports UserData.base, which is not in '
        'the package']


def test_a_v2_base_in_a_v1_package_is_reported(built_package, tmp_path):
    text = f'''
        from {V2_BASE} import userdata_standard


        class {CLASS}(userdata_standard.StandardUserData):
            pass
    '''
    assert problems_with(built_package, tmp_path,
                         {V1_FILE: source(text)}) == [
        f'{V1_WHERE}{CLASS} derives from {V2_BASE}.userdata_standard.'
        "StandardUserData, a base for Tacker's v2 API, but the package is "
        'for the v1 API']


def test_v2_class_on_the_abstract_base_needs_every_operation(v2_package,
                                                            tmp_path):
    text = f'''
        from {V2_BASE}.userdata_utils import AbstractUserData


        class {CLASS}(AbstractUserData):
            @staticmethod
            def instantiate({V2_ARGS}):
                return {{}}

            @staticmethod
            async def heal({V2_ARGS}):
                return {{}}
    '''
    assert problems_with(v2_package, tmp_path, {V2_FILE: source(text)}) == [
        f'{V2_WHERE}{CLASS} does not implement scale, scale_rollback, '
        'change_ext_conn, change_ext_conn_rollback, change_vnfpkg, '
        "change_vnfpkg_rollback, which Tacker's v2 API calls",
        f'{V2_WHERE}{V2_FILE}:10: {CLASS}.heal is a coroutine (async def); '
        'Tacker calls it and does not await it']


def test_v2_class_on_the_standard_base_needs_nothing_more(v2_package,
                                                         tmp_path):
    text = f'''
        from {V2_BASE}.userdata_standard import StandardUserData as Base


        class {CLASS}(Base):
            pass
    '''
    assert problems_with(v2_package, tmp_path,
                         {V2_FILE: source(text)}) == []


def test_an_optional_import_of_the_package_is_not_required(built_package,
                                                           tmp_path):
    text = '''
    try:
        from UserData import speedups
    except ImportError:
        speedups = None
''' + GOOD_V1
    assert problems_with(built_package, tmp_path,
                         {V1_FILE: source(text)}) == []


def test_user_data_that_is_not_a_python_file(built_package, tmp_path):
    text_file = 'UserData/user_data.txt'
    body = json.loads((layout.request_samples_dir() /
                       'simple_kubernetes_param_file.json').read_text())
    body['additionalParams']['lcm-operation-user-data'] = text_file
    request = tmp_path / 'mine.json'
    request.write_text(json.dumps(body))
    assert problems_with(built_package, tmp_path,
                         {text_file: source(GOOD_V1)}, [request]) == [
        f'mine.json: {text_file} ({CLASS}): Tacker imports it as the '
        'module UserData.user_data, which needs a .py file']
