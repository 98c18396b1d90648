"""Tacker's CSAR loader accepts the package ``package build`` writes.

``csar_utils.load_csar_data`` is what tacker-conductor runs on
``openstack vnf package upload``: TOSCA parsing with the SOL001 types
inside the package, the SHA-256 in TOSCA.meta, flavours, images and
instantiation levels.
"""
import hashlib
import uuid

import pytest

# flavour -> VDU -> initial number of VMs (VduInitialDelta)
EXPECTED_VDUS = {'simple': {'masterNode': 1, 'workerNode': 2,
                            'storage_server': 1},
                 'complex': {'masterNode': 3, 'workerNode': 2},
                 'podaffinity': {'masterNode': 3, 'workerNode': 2}}
ASPECTS = {'master_instance', 'worker_instance'}
# Instantiate request samples -> flavour.
REQUESTS = {'simple_kubernetes_param_file.json': 'simple',
            'simple_kubernetes_pv_param_file.json': 'simple',
            'complex_kubernetes_param_file.json': 'complex',
            'podaffinity_kubernetes_param_file.json': 'podaffinity'}


def _topology(flavour):
    return flavour['tpl_dict']['topology_template']


def _policies(flavour, policy_type):
    for policy in _topology(flavour)['policies']:
        for name, definition in policy.items():
            if definition['type'] == policy_type:
                yield name, definition


def test_every_flavour_is_returned(onboarded):
    assert set(onboarded.flavours) == set(EXPECTED_VDUS)
    assert onboarded.vnf_data['descriptor_id']
    assert onboarded.vnf_data['provider'] == 'tacker-kubernetes-mgmt'


@pytest.mark.parametrize('flavour_id', sorted(EXPECTED_VDUS))
def test_flavour_has_the_vdus_and_aspects(onboarded, flavour_id):
    flavour = onboarded.flavours[flavour_id]
    nodes = _topology(flavour)['node_templates']
    vdus = {name for name, node in nodes.items()
            if node['type'] == 'tosca.nodes.nfv.Vdu.Compute'}
    assert vdus == set(EXPECTED_VDUS[flavour_id])

    aspects = [d['properties']['aspects'] for _, d in
               _policies(flavour, 'tosca.policies.nfv.ScalingAspects')]
    assert len(aspects) == 1 and set(aspects[0]) == ASPECTS

    initial = {}
    for _, d in _policies(flavour, 'tosca.policies.nfv.VduInitialDelta'):
        for vdu in d['targets']:
            initial[vdu] = d['properties']['initial_delta'][
                'number_of_instances']
    assert initial == EXPECTED_VDUS[flavour_id]

    # Tacker read the instantiation levels and one image per VDU.
    assert flavour['instantiation_levels']
    assert {i['software_image_id'] for i in flavour['sw_images']} == vdus


def test_simple_has_the_optional_storage_server(onboarded):
    """Tacker's parser takes vdu_profile 0..1 and the block storage."""
    nodes = _topology(onboarded.flavours['simple'])['node_templates']
    server = nodes['storage_server']
    assert server['properties']['vdu_profile'] == {
        'min_number_of_instances': 0, 'max_number_of_instances': 1}
    assert server['requirements'] == [
        {'virtual_storage': 'storage_server_volume'}]
    assert nodes['storage_server_volume']['type'] == \
        'tosca.nodes.nfv.Vdu.VirtualBlockStorage'
    assert nodes['storage_server_CP']['requirements'] == [
        {'virtual_binding': 'storage_server'}]


def test_podaffinity_keeps_the_anti_affinity_rule(onboarded):
    rules = dict(_policies(onboarded.flavours['podaffinity'],
                           'tosca.policies.nfv.AntiAffinityRule'))
    assert rules == {'worker_anti_affinity_rule': {
        'type': 'tosca.policies.nfv.AntiAffinityRule',
        'targets': ['workerNode'], 'properties': {'scope': 'nfvi_node'}}}


def test_artifacts_are_unpacked_with_their_hashes(onboarded):
    # Tacker returns the artifacts TOSCA.meta lists, after checking them.
    paths = {a['Source'] for a in onboarded.artifacts}
    assert 'Scripts/kubernetes_mgmt.py' in paths
    for artifact in onboarded.artifacts:
        assert artifact['Algorithm'].upper().replace('-', '') == 'SHA256'
        data = (onboarded.root / artifact['Source']).read_bytes()
        assert hashlib.sha256(data).hexdigest() == artifact['Hash']


@pytest.mark.parametrize('name', sorted(REQUESTS))
def test_tacker_sizes_each_flavour_for_instantiate(vnfd_in_db, tacker_context,
                                                  tacker_request,
                                                  request_body, name):
    """Before instantiating, the conductor (``_instantiate_grant``) builds
    ``instantiated_vnf_info`` from the flavour's VNFD, parsing it again
    WITHOUT the substitution mappings' requirements; tosca-parser then
    checks the VNF node type's requirement occurrences on their own.

    Tacker 16 sizes a VDU outside every scaling aspect at one VNFC, so
    the storage server has one with or without a storage server in the
    request; without one, Heat creates no server for it (see
    test_tacker_user_data) and that VNFC keeps an empty compute resource.
    """
    from tacker import objects
    from tacker.vnflcm import utils as vnflcm_utils

    flavour_id = REQUESTS[name]
    body = request_body(name,
                        REPLACE_WITH_A_NEW_UUID=str(uuid.uuid4()),
                        REPLACE_WITH_OPENSTACK_VIM_ID=str(uuid.uuid4()),
                        REPLACE_WITH_NETWORK_ID=str(uuid.uuid4()))
    request = tacker_request('InstantiateVnfRequest', body)
    instance = objects.VnfInstance(context=tacker_context,
                                   id=str(uuid.uuid4()),
                                   vnfd_id=vnfd_in_db.vnfd_id)
    instance.instantiated_vnf_info = objects.InstantiatedVnfInfo(
        flavour_id=flavour_id, vnf_instance_id=instance.id)
    instance.instantiated_vnf_info.reinitialize()
    vnfd_dict = vnflcm_utils._get_vnfd_dict(tacker_context,
                                            instance.vnfd_id, flavour_id)
    vnflcm_utils._build_instantiated_vnf_info(vnfd_dict, request, instance,
                                              '')
    info = instance.instantiated_vnf_info
    counts = {}
    for vnfc in info.vnfc_resource_info:
        counts[vnfc.vdu_id] = counts.get(vnfc.vdu_id, 0) + 1
    assert counts == EXPECTED_VDUS[flavour_id]
    # The volume is the storage server's: healing the server replaces it.
    storage = {s.virtual_storage_desc_id: s.id
               for s in info.virtual_storage_resource_info}
    if flavour_id == 'simple':
        [server] = [v for v in info.vnfc_resource_info
                    if v.vdu_id == 'storage_server']
        assert server.storage_resource_ids == [
            storage['storage_server_volume']]
    else:
        assert storage == {}


# -- the sample CNF package ----------------------------------------------

@pytest.fixture(scope='module')
def cnf_onboarded(tmp_path_factory, csar_path, tacker_context):
    """The sample CNF package, built and verified by the real command,
    then loaded by Tacker as on upload."""
    import subprocess
    import sys

    from tacker.common import csar_utils

    out = tmp_path_factory.mktemp('cnf') / 'cnf.zip'
    for argv in (['build', '--cnf', '-o', str(out)], ['verify', str(out)]):
        done = subprocess.run(
            [sys.executable, '-m', 'kubernetes_mgmt.cli', 'package', *argv],
            capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    package_uuid = str(uuid.uuid4())
    vnf_data, flavours, artifacts = csar_utils.load_csar_data(
        tacker_context.elevated(), package_uuid, str(out))
    return vnf_data, {f['flavour_id']: f for f in flavours}, artifacts, \
        csar_path / package_uuid


def test_tacker_loads_the_cnf_package(cnf_onboarded):
    vnf_data, flavours, artifacts, root = cnf_onboarded
    assert vnf_data['product_name'] == 'Web CNF'
    assert set(flavours) == {'simple'}
    nodes = _topology(flavours['simple'])['node_templates']
    vdus = {name: node['properties']['name'] for name, node in nodes.items()
            if node['type'] == 'tosca.nodes.nfv.Vdu.Compute'}
    assert vdus == {'VDU1': 'web'}
    aspects = [d['properties']['aspects'] for _, d in _policies(
        flavours['simple'], 'tosca.policies.nfv.ScalingAspects')]
    assert [set(a) for a in aspects] == [{'web_aspect'}]
    sources = {a['Source'] for a in artifacts}
    assert sources == {'Files/kubernetes/web.yaml',
                       'Files/kubernetes/tacker-cnf-access.yaml'}
    for artifact in artifacts:
        data = (root / artifact['Source']).read_bytes()
        assert hashlib.sha256(data).hexdigest() == artifact['Hash']
