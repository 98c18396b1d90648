"""YAML for the stand-ins, through libyaml when PyYAML has it: kubeadm
writes and reads several documents per node, and the pure-Python emitter
and scanner cost a join ~20 ms of CPU. Same documents either way."""
from __future__ import annotations

import yaml

_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)
_DUMPER = getattr(yaml, 'CSafeDumper', yaml.SafeDumper)


def load(stream):
    return yaml.load(stream, Loader=_LOADER)  # noqa: S506 - a safe loader


def load_all(stream) -> list:
    return list(yaml.load_all(stream, Loader=_LOADER))


def dump(data, **options) -> str:
    return yaml.dump(data, Dumper=_DUMPER, **options)
