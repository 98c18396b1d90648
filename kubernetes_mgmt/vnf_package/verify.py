"""``kubernetes-mgmt package verify``: is this CSAR what Tacker needs?

Checks, each problem one line: the SHA-256 in TOSCA.meta, that every file
outside Definitions/ is listed there, every path the VNFD and the request
samples reference, the BaseHOT of each flavour, the image checksum in the
VNFD, that ``Scripts/kubernetes_mgmt.py`` is the installed driver module
(Tacker refuses every hook otherwise) or, in a package for Tacker's v2
API, that the VNFD's LCM script is this plugin's and nothing beside it
shadows the plugin, that each install script a request
names speaks this plugin's contract version (the driver refuses it
otherwise), that the user data class is one Tacker can call (read, never
run),
that each PV manifest a request registers is one NFS PersistentVolume on a
path the request exports, and, where ``kubernetes-validate`` is installed,
the Kubernetes manifests.

An archive with an unsafe entry (an absolute or ``..`` name, a link, a
name given twice, a forged size) is refused before anything else is read.

The requests checked are the package's own: those given with
``--request``; without any, the request samples of the plugin's sample
the package was built from (TOSCA.meta's Created-By says which), and
none for a package built from an operator's own source. Each is checked
for the files it references, for the names it takes from the package
(``request_names``) and for a kubernetes_version other than the minor
the package names. The VNFD id must be one id wherever the templates
set it (``descriptor_id``); so must a cluster package's software_version,
the Kubernetes minor its clusters install, and in a package for the v2
API it must be a minor (``software_version``): its upgrades go by it.

A CNF package (no BaseHOT and no Mgmt Driver: Tacker's Kubernetes infra
driver deploys it) is checked against its requests as the
kubernetes-namespaced driver checks them before it calls the cluster:
the files and namespace each names.
"""
from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes_mgmt.cluster import script as install_script
from kubernetes_mgmt.params.versions import package_problem
from kubernetes_mgmt.vnf_package import (
    basehot,
    bundle_check,
    cnf_check,
    descriptor_id,
    layout,
    manifests,
    meta,
    request_names,
    request_refs,
    software_version,
    userdata_check,
    vnf_property,
    vnfd,
)
from kubernetes_mgmt.vnf_package.csar import Csar, Refused, Unreadable

__all__ = ['Unreadable', 'VerifyResult', 'verify']

_NOT_ARTIFACTS = (f'{layout.DEFINITIONS}/', 'TOSCA-Metadata/')


@dataclass
class VerifyResult:
    path: Path
    problems: list[str] = field(default_factory=list)
    created_by: str = ''
    files: int = 0
    artifacts: int = 0
    flavours: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    user_data: list[str] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)  # of our contract
    manifests: int | None = None    # None: validator not installed
    cnf: bool = False               # no VMs, no Mgmt Driver
    v2: bool = False                # an LCM script for Tacker's v2 API
    descriptor_id: str | None = None
    software_version: str | None = None
    own_source: bool = False        # not built from a plugin sample
    image_bundle: str | None = None  # what Files/images/ holds

    def add(self, problems: Iterable[str]) -> None:
        # One line per problem, whatever an exception message contained.
        self.problems.extend(' '.join(p.split()) for p in problems)

    def summary(self) -> list[str]:
        if self.cnf:
            return self._cnf_summary()
        lines = [
            f'{self.path}: OK ({self.files} files, built by '
            f'{self.created_by or "an unknown tool"})',
            f'  hashes:     {self.artifacts} artifacts match TOSCA.meta',
            self._vnfd_line(),
            '  Kubernetes: '
            f'{software_version.summary(self.software_version)}',
            f'  flavours:   {", ".join(self.flavours)} (VNFD and BaseHOT)',
            f'  driver:     {layout.DRIVER_V2_FILE} is this plugin\'s v2 '
            f'LCM script (plugin {layout.plugin_version()})' if self.v2 else
            f'  driver:     {layout.DRIVER_FILE} is the installed module '
            f'(plugin {layout.plugin_version()})',
            f'  requests:   {self._requests()}',
            f'  scripts:    {", ".join(self.scripts) or "none"} '
            f'(install-script contract {install_script.CONTRACT_VERSION})',
            f'  user data:  {", ".join(self.user_data) or "none"} '
            "(read, not run: Tacker's base, the methods Tacker calls)",
            f'  images:     {self.image_bundle or "no bundle (pulled)"}',
        ]
        return [*lines, self._manifests_line()]


    def _cnf_summary(self) -> list[str]:
        return [
            f'{self.path}: OK, a CNF package ({self.files} files, built by '
            f'{self.created_by or "an unknown tool"})',
            f'  hashes:     {self.artifacts} artifacts match TOSCA.meta',
            self._vnfd_line(),
            f'  flavours:   {", ".join(self.flavours)} (VNFD)',
            f'  requests:   {self._requests()}' + (
                ' (their lcm-kubernetes-def-files and namespace, as the '
                'kubernetes-namespaced driver checks them)'
                if self.requests else ''),
            self._manifests_line()]

    def _vnfd_line(self) -> str:
        return (f'  VNFD id:    {self.descriptor_id or "not set"} (the '
                'VNFD ID openstack vnflcm create takes)')

    def _requests(self) -> str:
        if self.requests:
            return ', '.join(self.requests)
        if self.own_source:
            return ('none checked: the package was not built from a '
                    'plugin sample; give its Instantiate requests with '
                    '--request FILE')
        return 'none'

    def _manifests_line(self) -> str:
        if self.manifests is None:
            return ('  manifests:  not checked (pip install '
                    'kubernetes-validate to check them)')
        return (f'  manifests:  {self.manifests} Kubernetes manifest '
                'file(s) match the API schema')


def verify(path: Path, extra_requests: Iterable[Path] = ()) -> VerifyResult:
    """Check the CSAR at ``path``; Unreadable if it cannot be opened."""
    extra_requests = list(extra_requests)
    result = VerifyResult(Path(path))
    try:
        csar = Csar(Path(path))
    except Refused as exc:
        result.add(exc.problems)
        return result
    with csar:
        result.files = len(csar.names)
        tosca_meta = _check_meta(csar, result)
        if tosca_meta is None or not tosca_meta.entry_definitions:
            return result
        facts = vnfd.inspect(csar, tosca_meta.entry_definitions)
        result.add(facts.problems)
        result.flavours = facts.flavours
        _check_descriptor_id(facts, result)
        paths = _own_requests(result, extra_requests)
        result.v2 = bool(facts.v2_scripts)
        result.cnf = not facts.driver_files and not result.v2 and not any(
            name.startswith(f'{layout.BASE_HOT}/') for name in csar.names)
        if result.cnf:
            _check_cnf(csar, paths, facts, result)
            _check_manifests(csar, result)
            return result
        if not facts.driver_files and not result.v2:
            result.add([vnfd.no_driver_problem()])
        _check_software_version(facts, result)
        _check_bundle(csar, result)
        requests = _read_requests(paths)
        for flavour in facts.flavours:
            result.add(basehot.inspect(csar, flavour).problems)
        _check_images(csar, facts, result)
        if result.v2:
            _check_v2_script(csar, facts, result)
        else:
            _check_driver(csar, facts, result)
        _check_requests(csar, requests, facts, result)
        _check_manifests(csar, result)
    return result


def _own_requests(result: VerifyResult, extra: list[Path]) -> list[Path]:
    """The requests given, else those of the sample the package was
    built from; a package of the operator's own has no others."""
    if extra:
        return [Path(p) for p in extra]
    samples = layout.sample_requests_dir(result.created_by)
    result.own_source = samples is None
    try:
        return request_refs.instantiate_requests(samples) if samples else []
    except request_refs.RequestUnreadable as exc:
        raise Unreadable(str(exc)) from None


def _check_descriptor_id(facts: vnfd.VnfdFacts,
                         result: VerifyResult) -> None:
    sites = descriptor_id.sites(facts.documents)
    result.descriptor_id = descriptor_id.current(sites)
    result.add(descriptor_id.problems(sites))


def _check_software_version(facts: vnfd.VnfdFacts,
                            result: VerifyResult) -> None:
    sites = software_version.sites(facts.documents)
    result.software_version = vnf_property.current(sites)
    result.add(software_version.problems(sites, result.v2))


def _check_bundle(csar: Csar, result: VerifyResult) -> None:
    bundle, problems = bundle_check.check(csar, result.software_version)
    result.add(problems)
    if bundle is not None:
        result.image_bundle = (f'{len(bundle.images)} images for '
                               f'Kubernetes {bundle.kubernetes_version}')


def _check_cnf(csar: Csar, paths: list[Path], facts: vnfd.VnfdFacts,
               result: VerifyResult) -> None:
    requests = _read_requests(paths)        # readable JSON objects
    for request in requests:
        _check_names(csar, request, facts, result)
    result.requests, problems = cnf_check.check(csar, paths)
    result.add(problems)


def _read_requests(paths: list[Path]) -> list[request_refs.RequestRefs]:
    try:
        return [request_refs.read(p) for p in paths]
    except request_refs.RequestUnreadable as exc:
        raise Unreadable(str(exc)) from None


def _check_names(csar: Csar, request: request_refs.RequestRefs,
                 facts: vnfd.VnfdFacts, result: VerifyResult) -> None:
    """The names the request takes from its flavour (an unknown flavour
    is reported on its own)."""
    if request.flavour is None or request.flavour not in facts.flavours:
        return
    offered = request_names.of_flavour(csar, facts.documents,
                                       request.flavour)
    result.add(request_names.problems(request.name, request.body, offered))


def _check_meta(csar: Csar, result: VerifyResult) -> meta.ToscaMeta | None:
    if not csar.has(layout.TOSCA_META):
        result.add([f'{layout.TOSCA_META} is missing: not a CSAR built by '
                    'kubernetes-mgmt package build'])
        return None
    try:
        tosca_meta = meta.parse(csar.read(layout.TOSCA_META).decode(
            'utf-8', 'replace'))
    except meta.MetaError as exc:
        result.add([str(exc)])
        return None
    result.created_by = tosca_meta.header.get('Created-By', '')
    result.add(tosca_meta.problems)
    entry = tosca_meta.entry_definitions
    if entry and not csar.has(entry):
        result.add([f'TOSCA.meta: Entry-Definitions {entry} is not in the '
                    'package'])
    _check_hashes(csar, tosca_meta, result)
    return tosca_meta


def _check_hashes(csar: Csar, tosca_meta: meta.ToscaMeta,
                  result: VerifyResult) -> None:
    listed = set()
    for artifact in tosca_meta.artifacts:
        listed.add(artifact.name)
        if not csar.has(artifact.name):
            result.add([f'TOSCA.meta lists {artifact.name}, which is not in '
                        'the package'])
            continue
        actual = csar.digest(artifact.name, artifact.algorithm)
        if actual != artifact.hash.lower():
            result.add([
                f'TOSCA.meta: the {artifact.algorithm} of {artifact.name} '
                f'is {artifact.hash}, but the file has {actual}: it changed '
                'after the package was built (Tacker rejects the upload); '
                'rebuild with kubernetes-mgmt package build'])
    result.artifacts = len(listed)
    result.add(f'{name} is not listed in TOSCA.meta (no hash): rebuild with '
               'kubernetes-mgmt package build'
               for name in csar.names
               if name not in listed and not name.startswith(_NOT_ARTIFACTS))


def _check_images(csar: Csar, facts: vnfd.VnfdFacts,
                  result: VerifyResult) -> None:
    for image in facts.images:
        if not image.algorithm or not image.hash:
            continue
        try:
            actual = csar.digest(image.path, image.algorithm)
        except KeyError:
            result.add([f'{image.node}: sw_image_data.checksum.algorithm '
                        f'{image.algorithm} is unknown'])
            continue
        if actual != str(image.hash).lower():
            result.add([
                f'{image.node}: sw_image_data.checksum.hash is not the '
                f'{image.algorithm} of {image.path}: Glance would reject '
                'the image at instantiation; rebuild with kubernetes-mgmt '
                'package build --image PATH'])


def _check_driver(csar: Csar, facts: vnfd.VnfdFacts,
                  result: VerifyResult) -> None:
    installed_file = layout.installed_driver_file()
    for name in _differing(csar, facts.driver_files, installed_file):
        result.add([
            f'{name} differs from the installed driver module '
            f'{installed_file} (plugin {layout.plugin_version()}; the '
            f'package was built by {result.created_by or "unknown"}): '
            'the package was built for another plugin version and '
            'Tacker would refuse every LCM operation '
            '(MgmtDriverHashMatchFailure). Rebuild the package with '
            'kubernetes-mgmt package build and upload it, or install '
            'the plugin version the package was built for'])


def _differing(csar: Csar, names: set[str], installed_file: Path
               ) -> list[str]:
    """The members among ``names`` whose bytes are not the installed
    file's (a missing member is the VNFD check's to report)."""
    installed = installed_file.read_bytes()
    return [name for name in sorted(names)
            if csar.has(name) and csar.read(name) != installed]


def _check_v2_script(csar: Csar, facts: vnfd.VnfdFacts,
                     result: VerifyResult) -> None:
    installed_file = layout.installed_v2_script()
    result.add(
        f'{name} differs from this plugin\'s v2 LCM script '
        f'{installed_file}: Tacker would run other code than the '
        'plugin\'s. Rebuild the package with kubernetes-mgmt package build'
        for name in _differing(csar, facts.v2_scripts, installed_file))
    for name in sorted(facts.v2_scripts):
        beside = posixpath.join(posixpath.dirname(name), layout.V2_IMPORTS)
        shadows = sorted({n for n in csar.names if n == f'{beside}.py'
                          or n.startswith(f'{beside}/')})
        if shadows:
            result.add([
                f'{shadows[0]} is beside the LCM script {name}: Python '
                'would import it instead of the installed plugin (the '
                'script\'s directory comes first on sys.path); remove it '
                'from the package'])


def _check_requests(csar: Csar, requests: list[request_refs.RequestRefs],
                    facts: vnfd.VnfdFacts, result: VerifyResult) -> None:
    imported, scripts = set(), set()
    flavours = facts.flavours
    for request in requests:
        result.requests.append(request.name)
        if request.flavour and flavours and request.flavour not in flavours:
            result.add([f'{request.name}: flavourId {request.flavour} is '
                        f'not a flavour of the VNFD ({", ".join(flavours)})'])
        _check_names(csar, request, facts, result)
        mismatch = package_problem(request.kubernetes_version,
                                   result.software_version)
        if mismatch:
            result.add([f'{request.name}: {mismatch}'])
        result.add(f'{ref.request}: {ref.key} {ref.path} is not in the '
                   'package' for ref in request.references
                   if not csar.has(ref.path))
        for ref in request.references:
            if ref.kind == request_refs.INSTALL_SCRIPT and \
                    csar.has(ref.path) and ref.path not in scripts:
                scripts.add(ref.path)
                _check_script(csar, ref.path, result)
            if ref.kind == request_refs.PV_MANIFEST and csar.has(ref.path):
                result.add(f'{ref.request}: {ref.key}: {problem}'
                           for problem in manifests.pv_problems(
                               ref.path, csar.read(ref.path).decode(
                                   'utf-8', 'replace'),
                               request.nfs_exports))
        user_data = request.user_data
        if user_data and csar.has(user_data.path) and \
                (user_data.path, user_data.class_name) not in imported:
            imported.add((user_data.path, user_data.class_name))
            _check_user_data(csar, user_data, result)


def _check_script(csar: Csar, path: str, result: VerifyResult) -> None:
    problem = install_script.contract_problem(
        csar.read(path).decode('utf-8', 'replace'), path)
    if problem:
        result.add([problem])
    else:
        result.scripts.append(path)


def _check_user_data(csar: Csar, user_data: request_refs.UserData,
                     result: VerifyResult) -> None:
    problems = userdata_check.check(csar, user_data, result.v2)
    if problems:
        result.add(problems)
    else:
        result.user_data.append(
            f'{user_data.path} ({user_data.class_name})')


def _check_manifests(csar: Csar, result: VerifyResult) -> None:
    if not manifests.available():
        return
    names = [n for n in csar.names if n.startswith(f'{layout.MANIFESTS}/')
             and n.endswith(('.yaml', '.yml'))]
    for name in names:
        result.add(manifests.problems(
            name, csar.read(name).decode('utf-8', 'replace')))
    result.manifests = len(names)
