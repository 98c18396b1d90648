"""``kubernetes-mgmt``: operator and developer command line.

Each sub-command lives in its own module exposing ``register(subparsers)``;
the function it sets as ``func`` returns the exit status.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from kubernetes_mgmt import redact

_SUBCOMMAND_MODULES = (
    'kubernetes_mgmt.cli.validate',
    'kubernetes_mgmt.cli.lab',
    'kubernetes_mgmt.cli.demo',
    'kubernetes_mgmt.cli.package',
    'kubernetes_mgmt.cli.plan',
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='kubernetes-mgmt',
        description='Tacker Kubernetes Mgmt Driver tools.')
    subparsers = parser.add_subparsers(dest='command', required=True)
    for name in _SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # One operation: secrets registered while it runs are masked in what
    # it prints and logs.
    with redact.operation(f'kubernetes-mgmt {args.command}'), \
            redact.masked_output():
        return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
