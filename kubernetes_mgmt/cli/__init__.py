"""``kubernetes-mgmt``: operator and developer command line.

Each sub-command lives in its own module exposing ``register(subparsers)``;
the function it sets as ``func`` returns the exit status.
"""
from __future__ import annotations

import argparse
import importlib
import sys

_SUBCOMMAND_MODULES = (
    'kubernetes_mgmt.cli.validate',
    'kubernetes_mgmt.cli.lab',
    'kubernetes_mgmt.cli.demo',
    'kubernetes_mgmt.cli.package',
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
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
