"""``kubernetes-mgmt package build|verify``: the VNF package (CSAR).

build: assemble the CSAR to upload with ``openstack vnf package upload``.
verify: check a CSAR before uploading it (or after upgrading the plugin).
Exit status: 0 fine, 1 a problem (build failed, verify found problems),
2 the input cannot be read.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kubernetes_mgmt.vnf_package import layout

EXIT_OK = 0
EXIT_PROBLEMS = 1
EXIT_UNREADABLE = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        'package', help='build or verify the VNF package (CSAR)',
        description='Build the sample VNF package or verify a CSAR.')
    sub = parser.add_subparsers(dest='package_command', required=True)
    _register_build(sub)
    _register_verify(sub)


def _register_build(sub: Any) -> None:
    build = sub.add_parser(
        'build', help='assemble the VNF package (CSAR)',
        description='Assemble the VNF package from the sample shipped with '
                    'the plugin, the installed driver module and scripts, '
                    'the ETSI SOL001 type files and a VM image, with the '
                    'SHA-256 of every artifact in TOSCA.meta.')
    build.add_argument('-o', '--output', type=Path, metavar='FILE',
                       help=f'CSAR to write (default: {layout.DEFAULT_OUTPUT}'
                            f', with --cnf {layout.CNF_OUTPUT}, with --v2 '
                            f'{layout.V2_OUTPUT})')
    build.add_argument('--image', type=Path, metavar='PATH',
                       help='VM image for the masters and workers (an '
                            'Ubuntu cloud image); without it a placeholder '
                            'that cannot boot is packed')
    build.add_argument('--source', type=Path, metavar='DIR',
                       help='package source to build from, laid out as the '
                            'sample (TOSCA-Metadata/, Definitions/, '
                            'BaseHOT/, UserData/, Files/): your own '
                            'templates (default: the sample shipped with '
                            'the plugin); a source without BaseHOT/ is a CNF '
                            'package')
    build.add_argument('--cnf', action='store_true',
                       help='build the sample CNF package (a Deployment, '
                            'its Service and ConfigMap for the '
                            'kubernetes-namespaced infra driver, and the '
                            'Role README\'s least-privilege section '
                            'describes) instead of the cluster package')
    build.add_argument('--v2', action='store_true',
                       help='build the sample cluster package for Tacker\'s '
                            'v2 VNF LCM API (an LCM script instead of the '
                            'Mgmt Driver module; BaseHOT with one nested '
                            'stack per VM)')
    build.add_argument('--descriptor-id', metavar='UUID',
                       help='the VNFD id to give the package (the VNFD ID '
                            'of openstack vnflcm create): set in the top '
                            'VNFD and in the VNF node type\'s default and '
                            'valid_values, which must all agree (default: '
                            'the id the templates have)')
    build.add_argument('--kubernetes-version', metavar='MINOR',
                       help='the Kubernetes minor the package\'s clusters '
                            'install, e.g. 1.37 (a cluster package only): '
                            'set as the VNF\'s software_version in the top '
                            'VNFD and in the VNF node type\'s default and '
                            'valid_values. A change-vnfpkg to a package '
                            'naming the next minor upgrades a cluster '
                            '(default: the software_version the templates '
                            'have)')
    build.add_argument('--image-bundle', type=Path, metavar='DIR',
                       help='a directory of OCI archives (*.tar, e.g. '
                            'skopeo copy docker://REF oci-archive:FILE:REF) '
                            'of every image kubeadm needs for the package\'s '
                            'version (kubeadm config images list) and the '
                            'pod network\'s: packed under Files/images/ '
                            'with bundle.json (each archive\'s SHA-256, '
                            'reference and digest); nodes import them and '
                            'never pull (a cluster package only)')
    build.add_argument('--sol001-dir', type=Path, metavar='DIR',
                       help='where the ETSI SOL001 type files are: a '
                            'directory with etsi_nfv_sol001_common_types.'
                            'yaml and etsi_nfv_sol001_vnfd_types.yaml, or '
                            'a Tacker virtualenv, site-packages directory '
                            'or source tree holding them (default: the '
                            'tacker package installed in this Python, '
                            'else an earlier --fetch-sol001 download)')
    build.add_argument('--fetch-sol001', action='store_true',
                       help='if they are not found so, download the '
                            'tacker wheel from PyPI with pip once (cached '
                            'in ~/.cache/kubernetes-mgmt) and take them '
                            'from it; nothing is downloaded without this '
                            'option')
    build.set_defaults(func=_build)


def _register_verify(sub: Any) -> None:
    verify = sub.add_parser(
        'verify', help='check a VNF package (CSAR)',
        description='Check the hashes in TOSCA.meta, every path the VNFD '
                    'and the request samples reference, that '
                    'Scripts/kubernetes_mgmt.py is the installed driver '
                    'module, that the user data class derives from '
                    "Tacker's and has the methods Tacker calls (read, "
                    'never run), and that the PV manifests the requests '
                    'register are NFS PersistentVolumes on exported '
                    'directories. The requests checked are the '
                    "package's own: those given with --request, else the "
                    "request samples of the plugin's sample the package "
                    'was built from (none for a package built with '
                    '--source); each must name only flavours, '
                    'connection points, aspects, VDUs and Heat resources '
                    'the package has. The VNFD id must be the same in '
                    'the top VNFD and the VNF node type\'s default and '
                    'valid_values. An archive with an unsafe entry '
                    '(absolute or .. name, link, duplicate, forged size) '
                    'is refused before anything is read. A CNF '
                    'package (no BaseHOT, no Mgmt Driver) has its '
                    'requests\' lcm-kubernetes-def-files and namespace '
                    'checked as the kubernetes-namespaced driver would '
                    'check them. Exit status 0: fine, 1: problems, 2: '
                    'unreadable.')
    verify.add_argument('file', type=Path, metavar='FILE',
                        help='the CSAR (zip) to check')
    verify.add_argument('--request', type=Path, action='append',
                        default=[], metavar='FILE',
                        help='an Instantiate request (JSON) to check the '
                             'package against, instead of the sample\'s '
                             'requests; may be repeated')
    verify.set_defaults(func=_verify)


def _build(args: argparse.Namespace) -> int:
    from kubernetes_mgmt.vnf_package.build import (
        BuildError,
        BuildOptions,
        build,
    )
    default = layout.CNF_OUTPUT if args.cnf else \
        layout.V2_OUTPUT if args.v2 else layout.DEFAULT_OUTPUT
    options = BuildOptions(output=args.output or Path(default),
                           image=args.image, sol001_dir=args.sol001_dir,
                           fetch_sol001=args.fetch_sol001,
                           descriptor_id=args.descriptor_id,
                           kubernetes_version=args.kubernetes_version,
                           source=args.source, cnf=args.cnf, v2=args.v2,
                           image_bundle=args.image_bundle)
    try:
        report = build(options)
    except BuildError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return EXIT_PROBLEMS
    except OSError as exc:
        print(f'error: {exc.filename or ""}: {exc.strerror or exc}',
              file=sys.stderr)
        return EXIT_PROBLEMS
    except Exception as exc:    # a bug or a broken install: still one line
        print(f'error: build failed: {type(exc).__name__}: {exc}',
              file=sys.stderr)
        return EXIT_PROBLEMS
    print('\n'.join(report.lines()))
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    from kubernetes_mgmt.vnf_package.verify import Unreadable, verify
    try:
        result = verify(args.file, extra_requests=args.request)
    except Unreadable as exc:
        print(f'error: {exc}', file=sys.stderr)
        return EXIT_UNREADABLE
    except Exception as exc:    # a bug or a broken install: still one line
        print(f'error: verify failed: {type(exc).__name__}: {exc}',
              file=sys.stderr)
        return EXIT_PROBLEMS
    for problem in result.problems:
        print(f'problem: {problem}', file=sys.stderr)
    if result.problems:
        print(f'{args.file}: {len(result.problems)} problem(s)',
              file=sys.stderr)
        return EXIT_PROBLEMS
    print('\n'.join(result.summary()))
    return EXIT_OK
