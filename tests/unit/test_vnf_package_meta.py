"""TOSCA-Metadata/TOSCA.meta reading and writing."""
from __future__ import annotations

import pytest

from kubernetes_mgmt.vnf_package import meta

HEADER = ('TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\n'
          'Created-By: someone\nEntry-Definitions: Definitions/top.yaml\n')


def test_round_trip_keeps_text_values():
    parsed = meta.parse(HEADER + '\nName: Scripts/a.sh\nContent-Type: '
                        'application/x-sh\nAlgorithm: SHA-256\nHash: 0123\n')
    assert parsed.header['CSAR-Version'] == '1.1'
    assert parsed.artifacts == [
        meta.Artifact('Scripts/a.sh', 'SHA-256', '0123', 'application/x-sh')]
    assert parsed.problems == []
    assert meta.parse(meta.render(parsed)) == parsed


def test_source_is_accepted_like_name_and_crlf_is_fine():
    text = (HEADER + '\nSource: x\nAlgorithm: sha-512\nHash: ab\n') \
        .replace('\n', '\r\n')
    assert meta.parse(text).artifacts[0].name == 'x'


def test_problems_are_collected():
    parsed = meta.parse('TOSCA-Meta-File-Version: 1.0\n\n'
                        'Name: a\nHash: 1\n\n'
                        'Name: b\nAlgorithm: MD5\nHash: 1\n\n'
                        'Algorithm: SHA-256\nHash: 1\n')
    assert parsed.problems == [
        'TOSCA.meta: the header has no CSAR-Version',
        'TOSCA.meta: the header has no Created-By',
        'TOSCA.meta: the header has no Entry-Definitions',
        'TOSCA.meta: artifact a has no Algorithm',
        "TOSCA.meta: artifact b has the unknown Algorithm 'MD5' (use one "
        'of sha-224, sha-256, sha-384, sha-512)',
        'TOSCA.meta: a block has no Name (or Source): Algorithm, Hash']


@pytest.mark.parametrize('text, message', [
    ('', 'TOSCA.meta is empty'),
    (HEADER + '\nName: a\nthis is not a pair\n',
     "TOSCA.meta line 7: expected \"Key: value\", got 'this is not a "
     "pair'"),
])
def test_unreadable(text, message):
    with pytest.raises(meta.MetaError) as info:
        meta.parse(text)
    assert str(info.value) == message
