"""``kubernetes-mgmt package build``: assemble the CSAR.

A cluster package gets the INSTALLED driver module as
``Scripts/kubernetes_mgmt.py`` (byte for byte: Tacker refuses every hook
when its hash differs) or, when its VNFD is for Tacker's v2 API, the v2
LCM script as ``Scripts/tacker_kubernetes_mgmt_v2.py``; then the node
scripts of the installed plugin, the SOL001 type files of the Tacker
distribution and the VM image. A CNF package (a source without BaseHOT:
no VMs) gets its own files and the SOL001 types only. TOSCA.meta lists the
SHA-256 of every file outside ``Definitions/``, and its Created-By names
the plugin's sample a package was built from (verify then checks the
package against that sample's requests). The VNFD id must be the same
wherever the templates set it; ``--descriptor-id`` sets it everywhere, and
``--kubernetes-version`` so sets the VNF's software_version, the
Kubernetes minor a cluster package installs (``software_version``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from hashlib import sha256
from pathlib import Path, PurePosixPath

from kubernetes_mgmt import scripts_dir
from kubernetes_mgmt.params import image_bundle
from kubernetes_mgmt.params.image_bundle import ImageBundle
from kubernetes_mgmt.vnf_package import (
    descriptor_id,
    layout,
    meta,
    software_version,
    sol001,
    vnf_property,
    zipfmt,
)
from kubernetes_mgmt.vnf_package import image as images
from kubernetes_mgmt.vnf_package.zipfmt import Member

ALGORITHM = 'SHA-256'
_CONTENT_TYPES = {'.py': 'text/x-python', '.sh': 'application/x-sh',
                  '.yaml': 'application/yaml', '.yml': 'application/yaml',
                  '.json': 'application/json', '.txt': 'text/plain'}


class BuildError(Exception):
    """The package cannot be built; the message is one line."""


@dataclass(frozen=True)
class BuildOptions:
    output: Path = Path(layout.DEFAULT_OUTPUT)
    image: Path | None = None
    sol001_dir: Path | None = None
    cache_dir: Path | None = None       # for the SOL001 download
    fetch_sol001: bool = False          # may download them with pip
    descriptor_id: str | None = None    # the VNFD id to set everywhere
    # The Kubernetes minor (software_version) to set everywhere.
    kubernetes_version: str | None = None
    # A package source laid out as the sample (Definitions/, BaseHOT/,
    # ...), e.g. an operator's own templates; default: the sample.
    source: Path | None = None
    cnf: bool = False           # the sample CNF package instead
    v2: bool = False            # the sample package for the v2 API
    # OCI archives of every image the nodes need (sites with no registry).
    image_bundle: Path | None = None


@dataclass
class BuildReport:
    output: Path
    sample_dir: Path
    sol001_origin: str
    driver_file: Path | None            # None: a CNF package
    descriptor_id: str | None
    image: images.Image | None
    software_version: str | None = None
    bundle: ImageBundle | None = None
    driver_member: str = layout.DRIVER_FILE
    scripts: list[str] = field(default_factory=list)
    artifacts: int = 0
    files: int = 0

    def lines(self) -> list[str]:
        size = self.output.stat().st_size
        found = [
            f'VNF package written: {self.output} ({size} bytes, '
            f'{self.files} files)',
            f'  sample:        {self.sample_dir}',
            f'  SOL001 types:  {self.sol001_origin}',
            f'  VNFD id:       {self.descriptor_id or "not set"} (the '
            'VNFD ID openstack vnflcm create takes)',
        ]
        if self.image is None:
            return [*found,
                    '  CNF package:   no VMs, no Mgmt Driver; Tacker\'s '
                    'Kubernetes infra driver deploys its Files/kubernetes',
                    f'  TOSCA.meta:    {ALGORITHM} of {self.artifacts} '
                    'artifacts']
        img = self.image
        found += [
            '  Kubernetes:    '
            f'{software_version.summary(self.software_version)}',
            f'  driver:        {self.driver_member} = {self.driver_file} '
            f'(plugin {layout.plugin_version()})',
            *(['  API:           Tacker v2 VNF LCM (the VNFD\'s LCM script)']
              if self.driver_member == layout.DRIVER_V2_FILE else []),
            *(f'  script:        {name}' for name in self.scripts),
            f'  image:         {img.member_name} ({img.disk_format}, '
            f'{img.size} bytes; its SHA-512 is in the VNFD)',
            f'  TOSCA.meta:    {ALGORITHM} of {self.artifacts} artifacts',
        ]
        if self.bundle is not None:
            found.insert(-1, f'  image bundle:  {len(self.bundle.images)} '
                         'images for Kubernetes '
                         f'{self.bundle.kubernetes_version} '
                         f'({image_bundle.MANIFEST})')
        if img.placeholder:
            found.append(
                f'NOTE: no --image given: {img.member_name} is a '
                'placeholder that cannot boot. Rebuild with --image PATH '
                '(an Ubuntu cloud image) for a real deployment.')
        return found


def build(options: BuildOptions) -> BuildReport:
    output = _output_path(options.output)
    sample = _sample_dir(options.source, options.cnf, options.v2)
    cnf = layout.is_cnf_source(sample)
    for option, given in (('--image', options.image),
                          (software_version.OPTION,
                           options.kubernetes_version),
                          ('--image-bundle', options.image_bundle)):
        if cnf and given:
            raise BuildError(f'{sample} is a CNF package source (no '
                             f'{layout.BASE_HOT}): it takes no {option}')
    try:
        types = sol001.locate(options.sol001_dir, options.cache_dir,
                              options.fetch_sol001)
        image = None if cnf else (images.from_file(options.image)
                                  if options.image else images.placeholder())
        members = _Members()
        _add_sample(members, sample, image)
        vnfd_id = _settle(members, lambda texts: descriptor_id.settle(
            texts, options.descriptor_id))
        # A CNF package installs no cluster: its version is its own.
        version = None if cnf else _settle(
            members, lambda texts: software_version.settle(
                texts, options.kubernetes_version,
                layout.is_v2_source(sample)))
    except (sol001.Sol001Error, images.ImageError,
            vnf_property.PropertyError) as exc:
        raise BuildError(str(exc)) from None
    _add_sol001(members, types)
    driver, scripts = None, []
    member = layout.DRIVER_FILE
    if image is not None:
        driver, member = _driver(sample)
        members.add(Member(member, data=driver.read_bytes(),
                           executable=member == layout.DRIVER_V2_FILE))
        scripts = _add_scripts(members)
        members.add(Member(image.member_name, data=image.data,
                           source=image.source, compress=image.placeholder))
    bundle = _add_bundle(members, options.image_bundle, version)
    tosca_meta = _tosca_meta(sample, members, image,
                             layout.sample_name(sample))
    zipfmt.write(output, [Member(layout.TOSCA_META, data=tosca_meta.encode()),
                          *members.ordered()])
    return BuildReport(output=output, sample_dir=sample,
                       sol001_origin=types.origin, driver_file=driver,
                       descriptor_id=vnfd_id, driver_member=member,
                       software_version=version, bundle=bundle,
                       image=image, scripts=scripts,
                       artifacts=len(members.artifact_names()),
                       files=len(members.by_name) + 1)


def _add_bundle(members: _Members, directory: Path | None,
                version: str | None) -> ImageBundle | None:
    """The OCI archives of ``directory`` and the bundle.json listing
    them; refused when they are not for the package's version or lack an
    image kubeadm needs."""
    if directory is None:
        return None
    try:
        bundle = image_bundle.from_archives(Path(directory))
    except image_bundle.BundleError as exc:
        raise BuildError(f'--image-bundle: {exc}') from None
    local = {i.file: Path(directory) / i.file for i in bundle.images}
    problems = image_bundle.problems(bundle, local, version)
    if problems:
        raise BuildError(f'--image-bundle: {"; ".join(problems)}')
    for name in sorted(local):
        members.add(Member(f'{image_bundle.BUNDLE_DIR}/{name}',
                           source=local[name], compress=False))
    members.add(Member(image_bundle.MANIFEST,
                       data=bundle.to_json().encode()))
    return bundle


class _Members:
    """The CSAR's files by name; a name may come from one place only."""

    def __init__(self) -> None:
        self.by_name: dict[str, Member] = {}

    def add(self, member: Member) -> None:
        if member.name in self.by_name:
            raise BuildError(f'{member.name} would come from two places '
                             '(the sample tree must not contain it)')
        self.by_name[member.name] = member

    def texts(self, prefix: str, suffixes: tuple[str, ...]
              ) -> dict[str, str]:
        """The text of the members under ``prefix`` with a suffix."""
        return {name: (member.data or b'').decode('utf-8')
                for name, member in self.by_name.items()
                if name.startswith(prefix) and name.endswith(suffixes)}

    def set_text(self, name: str, text: str) -> None:
        self.by_name[name] = replace(self.by_name[name],
                                     data=text.encode('utf-8'))

    def ordered(self) -> list[Member]:
        return [self.by_name[name] for name in sorted(self.by_name)]

    def artifact_names(self) -> list[str]:
        # Definitions are the package's descriptors, not artifacts.
        return sorted(name for name in self.by_name
                      if not name.startswith(f'{layout.DEFINITIONS}/'))


def _output_path(output: Path) -> Path:
    output = Path(output)
    if output.is_dir():
        raise BuildError(f'-o {output} is a directory; give a file name')
    if not output.parent.resolve().is_dir():
        raise BuildError(f'-o {output}: directory {output.parent} does not '
                         'exist')
    return output


def _driver(sample: Path) -> tuple[Path, str]:
    """(installed file, CSAR member) of the driver a source needs."""
    if layout.is_v2_source(sample):
        return layout.installed_v2_script(), layout.DRIVER_V2_FILE
    return layout.installed_driver_file(), layout.DRIVER_FILE


def _sample_dir(source: Path | None = None, cnf: bool = False,
                v2: bool = False) -> Path:
    chosen = [flag for flag, on in (('--source', source is not None),
                                    ('--cnf', cnf), ('--v2', v2)) if on]
    if len(chosen) > 1:
        raise BuildError(f'{" and ".join(chosen)} exclude each other: '
                         '--cnf and --v2 build a sample package')
    if source is not None:
        meta = source / layout.TOSCA_META
        if not meta.is_file():
            raise BuildError(f'{source} is not a VNF package source: it has '
                             f'no {layout.TOSCA_META}')
        return source
    try:
        if cnf:
            return layout.cnf_package_dir()
        return layout.sample_v2_package_dir() if v2 \
            else layout.sample_package_dir()
    except FileNotFoundError as exc:
        raise BuildError(str(exc)) from None


def _add_sample(members: _Members, sample: Path,
                image: images.Image | None) -> None:
    for name in layout.tree_files(sample):
        if name == layout.TOSCA_META:
            continue            # rendered with the hashes below
        path = sample / name
        data = path.read_bytes()
        if image is not None and name.startswith(f'{layout.DEFINITIONS}/'):
            data = images.fill(data.decode('utf-8'), image).encode('utf-8')
        members.add(Member(name, data=data,
                           executable=bool(path.stat().st_mode & 0o111)))


Settle = Callable[[dict[str, str]], tuple[dict[str, str], str | None]]


def _settle(members: _Members, settle: Settle) -> str | None:
    """Set a VNF property everywhere with its module's ``settle``
    (``descriptor_id``, ``software_version``): its value, refused when
    the templates name more than one."""
    texts = members.texts(f'{layout.DEFINITIONS}/', ('.yaml', '.yml'))
    settled, value = settle(texts)
    for name, text in settled.items():
        if text != texts[name]:
            members.set_text(name, text)
    return value


def _add_sol001(members: _Members, types: sol001.Sol001Files) -> None:
    for name in sol001.FILES:
        members.add(Member(f'{layout.DEFINITIONS}/{name}',
                           data=types.path(name).read_bytes()))


def _add_scripts(members: _Members) -> list[str]:
    added = []
    for script in sorted(Path(scripts_dir()).glob('*.sh')):
        name = f'{layout.SCRIPTS}/{script.name}'
        members.add(Member(name, data=script.read_bytes(), executable=True))
        added.append(name)
    return added


def _tosca_meta(sample: Path, members: _Members,
                image: images.Image | None, sample_name: str | None) -> str:
    text = (sample / layout.TOSCA_META).read_text(encoding='utf-8')
    try:
        header = meta.parse(text).header
    except meta.MetaError as exc:
        raise BuildError(f'sample {exc}') from None
    header['Created-By'] = layout.created_by(sample_name)
    entry = header.get('Entry-Definitions')
    if entry not in members.by_name:
        raise BuildError(f'the sample TOSCA.meta names Entry-Definitions '
                         f'{entry!r}, which is not in the sample')
    artifacts = [meta.Artifact(
        name=name, algorithm=ALGORITHM,
        hash=(image.sha256 if image and name == image.member_name
              else _sha256(members.by_name[name])),
        content_type=_content_type(name))
        for name in members.artifact_names()]
    return meta.render(meta.ToscaMeta(header=header, artifacts=artifacts))


def _sha256(member: Member) -> str:
    """Of the member's bytes, or of its file streamed (an image
    archive of the bundle)."""
    if member.data is not None or member.source is None:
        return sha256(member.data or b'').hexdigest()
    return image_bundle.sha256_of(member.source)


def _content_type(name: str) -> str:
    suffix = PurePosixPath(name).suffix.lower()
    return _CONTENT_TYPES.get(suffix, 'application/octet-stream')
