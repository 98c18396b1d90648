"""TOSCA-Metadata/TOSCA.meta: a header block, then one block per artifact.

Blocks are separated by blank lines; each line is ``Key: value``. Tacker
reads an artifact block as ``Name`` (or ``Source``), ``Content-Type``
(ignored), ``Algorithm`` and ``Hash`` and checks the hash of every artifact
that is not a VM image. The values are kept as text here: the header's
``CSAR-Version: 1.1`` must not turn into a number.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from kubernetes_mgmt.vnf_package.digest import ALGORITHMS

HEADER_KEYS = ('TOSCA-Meta-File-Version', 'CSAR-Version', 'Created-By',
               'Entry-Definitions')
_LINE = re.compile(r'(?P<key>[A-Za-z][A-Za-z0-9-]*):[ \t]*(?P<value>.*)')


class MetaError(ValueError):
    """TOSCA.meta cannot be read at all; the message is one line."""


@dataclass(frozen=True)
class Artifact:
    name: str
    algorithm: str
    hash: str
    content_type: str = 'application/octet-stream'


@dataclass
class ToscaMeta:
    header: dict[str, str]
    artifacts: list[Artifact] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def entry_definitions(self) -> str | None:
        return self.header.get('Entry-Definitions')


def parse(text: str) -> ToscaMeta:
    """Read TOSCA.meta; malformed artifact blocks become ``problems``."""
    blocks = _blocks(text)
    if not blocks:
        raise MetaError('TOSCA.meta is empty')
    header = _pairs(*blocks[0])
    meta = ToscaMeta(header=header)
    meta.problems += [f'TOSCA.meta: the header has no {key}'
                      for key in HEADER_KEYS if not header.get(key)]
    for block in blocks[1:]:
        _add_artifact(meta, _pairs(*block))
    return meta


def render(meta: ToscaMeta) -> str:
    blocks = ['\n'.join(f'{k}: {v}' for k, v in meta.header.items())]
    for artifact in meta.artifacts:
        blocks.append(f'Name: {artifact.name}\n'
                      f'Content-Type: {artifact.content_type}\n'
                      f'Algorithm: {artifact.algorithm}\n'
                      f'Hash: {artifact.hash}')
    return '\n\n'.join(blocks) + '\n'


def _blocks(text: str) -> list[tuple[int, list[str]]]:
    """(number of the first line, lines) of each blank-line separated
    block."""
    blocks: list[tuple[int, list[str]]] = []
    current: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            if not current:
                blocks.append((number, current))
            current.append(line)
        else:
            current = []
    return blocks


def _pairs(first_line: int, lines: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for number, line in enumerate(lines, start=first_line):
        match = _LINE.fullmatch(line.strip())
        if not match:
            raise MetaError(f'TOSCA.meta line {number}: expected '
                            f'"Key: value", got {line.strip()[:60]!r}')
        pairs[match['key']] = match['value'].strip()
    return pairs


def _add_artifact(meta: ToscaMeta, pairs: dict[str, str]) -> None:
    name = pairs.get('Name') or pairs.get('Source')
    if not name:
        meta.problems.append('TOSCA.meta: a block has no Name (or Source): '
                             + ', '.join(sorted(pairs)))
        return
    missing = [k for k in ('Algorithm', 'Hash') if not pairs.get(k)]
    if missing:
        meta.problems.append(f'TOSCA.meta: artifact {name} has no '
                             + ' and no '.join(missing))
        return
    algorithm = pairs['Algorithm']
    if algorithm.lower() not in ALGORITHMS:
        meta.problems.append(
            f'TOSCA.meta: artifact {name} has the unknown Algorithm '
            f'{algorithm!r} (use one of {", ".join(ALGORITHMS)})')
        return
    meta.artifacts.append(Artifact(
        name=name, algorithm=algorithm, hash=pairs['Hash'],
        content_type=pairs.get('Content-Type', '')))
