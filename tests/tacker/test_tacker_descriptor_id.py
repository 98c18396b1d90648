"""Tacker's CSAR loader and the VNFD id: it refuses a package whose id
differs between the top VNFD and the VNF node type's default or
valid_values (what ``package verify`` refuses), and takes the id
``package build --descriptor-id`` sets."""
from __future__ import annotations

import uuid
import zipfile
from pathlib import Path

import pytest

NEW_ID = '3f1c2b8e-5d4a-4e6f-9a7b-0c1d2e3f4a5b'
SAMPLE_ID = 'b8e8e8a5-8d67-4f1f-bccb-4c746998f3a4'
TOP = 'Definitions/kubernetes_mgmt_top.vnfd.yaml'
TYPES = 'Definitions/kubernetes_mgmt_types.yaml'
# The line that holds the id in each place.
PLACES = {'top': (TOP, 'descriptor_id: '),
          'default': (TYPES, 'default: '),
          'valid_values': (TYPES, 'valid_values: ')}


def package(capsys, *argv: str) -> tuple[int, str]:
    from kubernetes_mgmt.cli import main

    status = main(['package', *argv])
    return status, capsys.readouterr().err


def load(context, csar: Path):
    from tacker.common import csar_utils

    return csar_utils.load_csar_data(context, str(uuid.uuid4()), str(csar))


def one_place_changed(source: Path, target: Path, place: str) -> Path:
    name, marker = PLACES[place]
    with zipfile.ZipFile(source) as archive:
        files = {n: archive.read(n) for n in archive.namelist()}
    lines = files[name].decode().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines)
                 if marker in line and SAMPLE_ID in line)
    lines[index] = lines[index].replace(SAMPLE_ID, NEW_ID)
    files[name] = ''.join(lines).encode()
    with zipfile.ZipFile(target, 'w') as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return target


def test_tacker_takes_the_id_build_sets(capsys, csar_path, tacker_context,
                                        tmp_path):
    csar = tmp_path / 'new-id.zip'
    assert package(capsys, 'build', '-o', str(csar), '--descriptor-id',
                   NEW_ID) == (0, '')
    vnf_data, flavours, _ = load(tacker_context.elevated(), csar)
    assert vnf_data['descriptor_id'] == NEW_ID
    assert {f['flavour_id'] for f in flavours} == {'simple', 'complex',
                                                   'podaffinity'}


@pytest.mark.parametrize('place', sorted(PLACES))
def test_tacker_refuses_what_verify_refuses(capsys, csar_file, csar_path,
                                            tacker_context, tmp_path,
                                            place):
    from tacker.common import exceptions

    bad = one_place_changed(csar_file, tmp_path / 'bad.zip', place)
    status, err = package(capsys, 'verify', str(bad))
    assert status == 1
    assert 'the VNFD id (descriptor_id) disagrees' in err
    with pytest.raises(exceptions.InvalidCSAR,
                       match='property "descriptor_id" is not valid'):
        load(tacker_context.elevated(), bad)
