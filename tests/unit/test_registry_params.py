"""Private registries and pinned apt keys in the Instantiate request:
what is refused before any host (with the field's path, never the
secret), and what the prepare role is sent."""
from __future__ import annotations

import base64
import datetime
import json
import logging
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubernetes_mgmt import redact
from kubernetes_mgmt.cluster import contract, roles
from kubernetes_mgmt.cluster.cluster_plan import build_plan
from kubernetes_mgmt.errors import ValidationError
from kubernetes_mgmt.operations.context import _warn_unverified_registries
from kubernetes_mgmt.params import lcm_requests, rotation
from kubernetes_mgmt.params.casing import snake_key
from kubernetes_mgmt.params.validate import (
    parse_instantiate_request,
    read_stored_params,
)
from kubernetes_mgmt.shim.v2 import operations
from kubernetes_mgmt.shim.v2.instance import V2Instance

DATA = Path(__file__).resolve().parent.parent / 'data' / 'requests'
K = 'additionalParams.k8s_cluster_installation_param'
R = f'{K}.private_registries'
NOW = datetime.datetime.now(datetime.timezone.utc)
PASSWORD = 'Reg-S3cret-pw'
TOKEN = 'tok.EN-s3cret~value'


def _cert(name: str, key, issuer_key=None, *, days: int = 365,
          start_days: int = -1) -> str:
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject)
            .issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(NOW + datetime.timedelta(days=start_days))
            .not_valid_after(NOW + datetime.timedelta(days=days))
            .sign(issuer_key or key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _key_pem(key) -> str:
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


CA_KEY = ec.generate_private_key(ec.SECP256R1())
CLIENT_KEY = ec.generate_private_key(ec.SECP256R1())
CA = _cert('site CA', CA_KEY)
CLIENT = _cert('node client', CLIENT_KEY, CA_KEY)


def registry(**changes) -> dict:
    entry = {'registry': 'registry.k8s.io',
             'mirrors': ['https://reg.site:5000/v2/k8s',
                         'https://reg2.site:5000'],
             'ca_cert': CA, 'client_cert': CLIENT,
             'client_key': _key_pem(CLIENT_KEY),
             'username': 'puller', 'password': PASSWORD}
    entry.update(changes)
    return {k: v for k, v in entry.items() if v is not None}


def request(*entries: dict, fingerprints: list | None = None) -> dict:
    body = json.loads((DATA / 'simple_kubernetes_param_file.json')
                      .read_text(encoding='utf-8'))
    param = body['additionalParams']['k8s_cluster_installation_param']
    param['private_registries'] = list(entries)
    param.pop('proxy', None)    # the sample's placeholders are no URLs
    if fingerprints is not None:
        param['apt_key_fingerprints'] = fingerprints
    return body


def problems(body: dict) -> dict[str, str]:
    with pytest.raises(ValidationError) as info:
        parse_instantiate_request(body)
    found = {p.path: p.message for p in info.value.problems}
    text = str(info.value)
    for secret in (PASSWORD, TOKEN, _key_pem(CLIENT_KEY).splitlines()[1]):
        assert secret not in text
    return found


def test_a_full_registry_entry_is_accepted_with_its_fingerprints():
    params = parse_instantiate_request(request(
        registry(), fingerprints=['de15 b144 86cd 377b 9e87 6e1a 2346 54da '
                                  '9a29 6436']))
    (reg,) = params.registries
    assert reg.mirrors == ('https://reg.site:5000/v2/k8s',
                           'https://reg2.site:5000')
    assert reg.authorization == 'Basic ' + base64.b64encode(
        f'puller:{PASSWORD}'.encode()).decode()
    assert params.apt_key_fingerprints == (
        'DE15B14486CD377B9E876E1A234654DA9A296436',)
    # Nothing secret in the repr a log line could show.
    assert PASSWORD not in repr(params) and 'PRIVATE KEY' not in repr(params)


@pytest.mark.parametrize('change, path, words', [
    ({'registry': 'Registry.K8s.io'}, 'registry', 'not a registry name'),
    ({'mirrors': ['ftp://reg.site']}, 'mirrors[0]', 'not a mirror URL'),
    ({'mirrors': ['https://reg.site', 'https://reg.site']}, 'mirrors[1]',
     'given twice'),
    ({'mirrors': ['http://reg.site:5000']}, 'mirrors',
     'credentials would cross the network in clear'),
    ({'ca_cert': 'not a pem'}, 'ca_cert', 'not a PEM certificate'),
    ({'ca_cert': _cert('old CA', CA_KEY, days=-1, start_days=-30)},
     'ca_cert', "'CN=old CA' expired on"),
    ({'client_key': None}, 'client_key', "required with 'client_cert'"),
    ({'client_key': _key_pem(ec.generate_private_key(ec.SECP256R1()))},
     'client_key', 'does not belong to client_cert'),
    ({'client_key': '-----BEGIN PRIVATE KEY-----\nAAAA\n'
                    '-----END PRIVATE KEY-----\n'},
     'client_key', 'not an unencrypted PEM private key'),
    ({'password': None}, 'password', "required with 'username'"),
    ({'token': TOKEN}, 'token', 'either a token or a username'),
    ({'username': None, 'password': None, 'token': 'a b'}, 'token',
     'bearer token'),
    ({'skip_verify': 'yes'}, 'skip_verify', 'must be a boolean'),
    ({'insecure': True}, 'insecure', 'unknown key'),
])
def test_a_bad_entry_is_refused_naming_its_field(change, path, words):
    found = problems(request(registry(**change)))
    assert words in found[f'{R}[0].{path}'], found


def test_the_same_registry_twice_and_a_bad_fingerprint_are_refused():
    found = problems(request(registry(), registry(),
                             fingerprints=['DE15B144']))
    assert 'given twice' in found[f'{R}[1].registry']
    assert 'not an OpenPGP fingerprint' in \
        found[f'{K}.apt_key_fingerprints[0]']


@pytest.fixture
def plan_with(package, topology_of):
    def build(body: dict):
        params = parse_instantiate_request(body)
        return build_plan('inst-1', params, topology_of(), package)
    return build


def test_prepare_sends_each_registry_setting_base64_encoded(plan_with,
                                                             options):
    options(registry_mirrors=['docker.io=https://hub-mirror.site',
                              'registry.k8s.io=https://overridden.site'])
    plan = plan_with(request(registry(), registry(
        registry='reg.site:5000', mirrors=[], username=None, password=None,
        client_cert=None, client_key=None, token=TOKEN, skip_verify=True)))
    config = roles.prepare(plan, plan.workers[0])
    contract.check('prepare', config)
    # The request's own mirrors replace the site's for that registry.
    assert config['REGISTRY_MIRRORS'] == (
        'docker.io=https://hub-mirror.site,'
        'registry.k8s.io=https://reg.site:5000/v2/k8s,'
        'registry.k8s.io=https://reg2.site:5000')

    def items(key: str) -> dict[str, str]:
        return {k: base64.b64decode(v).decode() for k, v in
                (i.split('=', 1) for i in config[key].split(','))}
    assert items('REGISTRY_CA') == {'registry.k8s.io': CA,
                                    'reg.site:5000': CA}
    assert items('REGISTRY_CLIENT_KEY') == {
        'registry.k8s.io': _key_pem(CLIENT_KEY)}
    assert items('REGISTRY_AUTH')['reg.site:5000'] == f'Bearer {TOKEN}'
    assert config['REGISTRY_SKIP_VERIFY'] == 'reg.site:5000'
    assert config['K8S_APT_KEY_FINGERPRINTS'] == \
        'DE15B14486CD377B9E876E1A234654DA9A296436'


def test_every_registry_secret_is_masked_once_accepted():
    entry = registry()
    with redact.operation('test'):
        params = parse_instantiate_request(request(entry))
        (reg,) = params.registries
        shown = redact.redact(' '.join([
            PASSWORD, reg.authorization, reg.authorization.split()[1],
            *entry['client_key'].splitlines()[1:-1]]))
    assert PASSWORD not in shown
    assert reg.authorization.split()[1] not in shown
    for line in entry['client_key'].splitlines()[1:-1]:
        assert line not in shown


def test_a_request_without_registries_sends_none(plan_with):
    body = request()
    del body['additionalParams']['k8s_cluster_installation_param'][
        'private_registries']
    config = roles.prepare(plan_with(body), plan_with(body).workers[0])
    assert {k for k, v in config.items()
            if k.startswith('REGISTRY_') and v} == set()


def test_the_site_option_pins_the_apt_key_unless_the_request_does(
        plan_with, options):
    options(apt_key_fingerprints=['0123456789abcdef0123456789abcdef01234567'])
    plan = plan_with(request())
    assert roles.prepare(plan, plan.workers[0])[
        'K8S_APT_KEY_FINGERPRINTS'] == \
        '0123456789ABCDEF0123456789ABCDEF01234567'
    pinned = plan_with(request(fingerprints=['AB' * 20, 'CD' * 20]))
    assert roles.upgrade(pinned, pinned.workers[0], '1.38', 'node')[
        'K8S_APT_KEY_FINGERPRINTS'] == f'{"AB" * 20},{"CD" * 20}'


def test_an_unverified_registry_is_warned_about_by_each_operation(caplog):
    params = parse_instantiate_request(request(
        registry(skip_verify=True), registry(registry='reg.site:5000',
                                             skip_verify=False)))
    caplog.set_level(logging.WARNING, logger='kubernetes_mgmt')
    for operation in ('scale inst-1', 'heal inst-1'):
        _warn_unverified_registries(operation, params)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2 and warned[1].startswith(
        'heal inst-1: TLS certificates of registry registry.k8s.io are not '
        'verified')
    assert 'reg.site:5000' not in warned[0]


# -- new registries for a cluster that exists (v2 scale and heal) ----------

NEW_PASSWORD = 'Rotated-S3cret-pw'


def _instance_with(body: dict) -> V2Instance:
    instance = V2Instance({'id': 'inst-1', 'metadata': {}})
    instance.store_params(body['additionalParams'])
    return instance


def _scale(instance: V2Instance, additional: dict) -> operations.Call:
    return operations.Call(
        operation='scale_start', instance=instance, grant=None,
        grant_request=None,
        request={'type': 'SCALE_OUT', 'aspectId': 'worker_instance',
                 'additionalParams': additional})


@pytest.mark.parametrize('operation', ['scale_start', 'heal_start'])
def test_a_scale_or_heal_request_replaces_the_stored_registries(
        state_key, operation):
    instance = _instance_with(request(registry()))
    call = _scale(instance, {'private_registries': [
        registry(password=NEW_PASSWORD),
        registry(registry='reg.site:5000', client_cert=None,
                 client_key=None, username=None, password=None,
                 token=TOKEN)]})
    call.operation = operation
    with redact.operation('test'):
        operations.rotate_registries(call)
        # The new secrets are masked from then on in what is shown.
        assert NEW_PASSWORD not in redact.redact(f'pw {NEW_PASSWORD}')
    params = read_stored_params(instance.stored_params())
    assert [(r.registry, r.password, r.token) for r in params.registries] \
        == [('registry.k8s.io', NEW_PASSWORD, None),
            ('reg.site:5000', None, TOKEN)]
    # Sealed: the metadata Tacker shows carries no secret in clear.
    assert NEW_PASSWORD not in str(instance.to_dict())


def test_a_request_without_registries_keeps_the_stored_ones(state_key):
    instance = _instance_with(request(registry()))
    sealed = instance.vnf_metadata['kubernetesMgmtParams']
    operations.rotate_registries(_scale(instance, {}))
    assert instance.vnf_metadata['kubernetesMgmtParams'] == sealed


def test_an_empty_list_removes_every_registry(state_key):
    instance = _instance_with(request(registry()))
    operations.rotate_registries(_scale(instance,
                                        {'private_registries': []}))
    assert read_stored_params(instance.stored_params()).registries == ()


def test_bad_new_registries_are_refused_and_change_nothing(state_key):
    instance = _instance_with(request(registry()))
    sealed = instance.vnf_metadata['kubernetesMgmtParams']
    expired = _cert('site CA', CA_KEY, days=-1, start_days=-30)
    with pytest.raises(ValidationError) as info:
        operations.rotate_registries(_scale(instance, {
            'private_registries': [registry(ca_cert=expired,
                                            password=NEW_PASSWORD),
                                   {'registry': 'x', 'mirrors': 'one'}]}))
    found = {p.path: p.message for p in info.value.problems}
    assert set(found) == {'additionalParams.private_registries[1].mirrors'}
    with pytest.raises(ValidationError) as info:
        operations.rotate_registries(_scale(instance, {
            'private_registries': [registry(ca_cert=expired,
                                            password=NEW_PASSWORD)]}))
    found = {p.path: p.message for p in info.value.problems}
    assert 'expired on' in found[
        'additionalParams.private_registries[0].ca_cert']
    assert NEW_PASSWORD not in str(info.value)
    assert instance.vnf_metadata['kubernetesMgmtParams'] == sealed


def test_stored_camel_case_registries_are_replaced_not_doubled():
    body = request(registry())['additionalParams']
    param = body.pop('k8s_cluster_installation_param')
    param['privateRegistries'] = param.pop('private_registries')
    body['k8sClusterInstallationParam'] = param
    assert snake_key('privateRegistries') == 'private_registries'
    new = rotation.with_registries(body, [registry(password=NEW_PASSWORD)])
    (reg,) = read_stored_params(new).registries
    assert reg.password == NEW_PASSWORD
    assert 'privateRegistries' not in new['k8sClusterInstallationParam']
    assert body['k8sClusterInstallationParam']['privateRegistries'][0][
        'password'] == PASSWORD     # the stored copy is not changed


def test_validate_request_checks_the_registries_of_a_scale_or_heal():
    bad = {'additionalParams': {'private_registries': [
        registry(client_key=_key_pem(CA_KEY))]}}
    for kind, body in ((lcm_requests.SCALE, {
            'type': 'SCALE_OUT', 'aspectId': 'worker_instance', **bad}),
            (lcm_requests.HEAL, bad)):
        assert [(path, message) for path, message in
                lcm_requests.request_findings(kind, body)] == [(
                    ('additionalParams', 'private_registries', 0,
                     'client_key'),
                    'does not belong to client_cert (their public keys '
                    'differ)')]


def test_the_hosts_role_sends_the_registries_to_nodes_outside(plan_with):
    plan = plan_with(request(registry()))
    config = roles.hosts(plan, plan.masters[0])
    contract.check('hosts', config)
    assert config['REGISTRY_AUTH'] == roles.prepare(
        plan, plan.workers[0])['REGISTRY_AUTH']
    assert config['REGISTRY_MIRRORS'].startswith(
        'registry.k8s.io=https://reg.site:5000/v2/k8s')
