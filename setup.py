import glob
import os

import setuptools
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# The node scripts live in the repository's top-level scripts/ (shellcheck,
# golden tests); installed, kubernetes_mgmt.scripts_dir() finds them here.
SCRIPTS_TARGET = os.path.join('kubernetes_mgmt', 'data', 'scripts')


class BuildWithScripts(build_py):
    """build_py that also copies scripts/*.sh into the package."""

    def _scripts(self):
        return sorted(glob.glob(os.path.join(HERE, 'scripts', '*.sh')))

    def run(self):
        super().run()
        target = os.path.join(self.build_lib, SCRIPTS_TARGET)
        self.mkpath(target)
        for script in self._scripts():
            self.copy_file(script, target)   # keeps the executable bit

    def get_outputs(self, include_bytecode=True):
        target = os.path.join(self.build_lib, SCRIPTS_TARGET)
        return super().get_outputs(include_bytecode) + [
            os.path.join(target, os.path.basename(s))
            for s in self._scripts()]


setuptools.setup(cmdclass={'build_py': BuildWithScripts})
