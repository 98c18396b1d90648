import glob
import os

import setuptools
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# The node scripts live in the repository's top-level scripts/ (shellcheck,
# golden tests); installed, kubernetes_mgmt.scripts_dir() finds them here.
SCRIPTS_TARGET = os.path.join('kubernetes_mgmt', 'data', 'scripts')
# The sample VNF package and request samples live in samples/; installed,
# kubernetes_mgmt.vnf_package.layout.samples_root() finds them here, so
# `kubernetes-mgmt package build` works from a wheel.
SAMPLES_TARGET = os.path.join('kubernetes_mgmt', 'data', 'samples')
SAMPLE_TREES = ('vnf_package', 'requests', 'cnf_package', 'cnf_requests',
                'vnf_package_v2', 'requests_v2')


class BuildWithScripts(build_py):
    """build_py that also copies scripts/*.sh and samples/ into the
    package."""

    def _scripts(self):
        return sorted(glob.glob(os.path.join(HERE, 'scripts', '*.sh')))

    def _samples(self):
        """Relative paths under samples/ of the files to ship."""
        found = []
        for tree in SAMPLE_TREES:
            top = os.path.join(HERE, 'samples', tree)
            for directory, dirs, files in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d != '__pycache__'
                                 and not d.startswith('.'))
                found += [os.path.relpath(os.path.join(directory, f),
                                          os.path.join(HERE, 'samples'))
                          for f in sorted(files)
                          if not f.startswith('.') and
                          not f.endswith(('.pyc', '.pyo'))]
        return found

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, SCRIPTS_TARGET)
        self.mkpath(target)
        for script in self._scripts():
            self.copy_file(script, target)   # keeps the executable bit
        for relative in self._samples():
            destination = os.path.join(self.build_lib, SAMPLES_TARGET,
                                       relative)
            self.mkpath(os.path.dirname(destination))
            self.copy_file(os.path.join(HERE, 'samples', relative),
                           destination)

    def get_outputs(self, include_bytecode=True):
        target = os.path.join(self.build_lib, SCRIPTS_TARGET)
        samples = os.path.join(self.build_lib, SAMPLES_TARGET)
        return super().get_outputs(include_bytecode) + [
            os.path.join(target, os.path.basename(s))
            for s in self._scripts()] + [
            os.path.join(samples, relative) for relative in self._samples()]


setuptools.setup(cmdclass={'build_py': BuildWithScripts})
