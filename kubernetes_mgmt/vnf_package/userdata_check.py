"""Does the package's user data module import and define its class?

The module is imported as Tacker does it (package root on ``sys.path``,
``UserData.<name>``), but in a child process: its code must not run inside
the verifier, and the stand-in Tacker modules used when Tacker is not
installed must not leak into anything else.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath

from kubernetes_mgmt.vnf_package.csar import Csar
from kubernetes_mgmt.vnf_package.request_refs import UserData

TIMEOUT = 60    # Tacker gives the user data as long to run

# Runs in the child: argv = package root, module, class name. Prints one
# JSON object: {"stubbed": bool, "error": str (only on a problem)}.
_PROBE = r'''
import abc, importlib, json, sys, types

root, module_name, class_name, api = sys.argv[1:5]
result = {"stubbed": False}


def stub_modules(names):
    parent = None
    for name in names:
        module = sys.modules.get(name) or types.ModuleType(name)
        module.__path__ = []
        sys.modules[name] = module
        if parent is not None:
            setattr(parent, name.rsplit(".", 1)[1], module)
        parent = module
    return parent


try:
    if api == "v2":
        from tacker.sol_refactored.infra_drivers.openstack.userdata_utils \
            import AbstractUserData
    else:
        from tacker.vnfm.lcm_user_data.abstract_user_data \
            import AbstractUserData
except Exception:
    # Stand-ins for Tacker's user-data modules: enough to import a user
    # data file, not to run it.
    result["stubbed"] = True

    class AbstractUserData(metaclass=abc.ABCMeta):
        @staticmethod
        @abc.abstractmethod
        def instantiate(base_hot_dict=None, vnfd_dict=None,
                        inst_req_info=None, grant_info=None):
            raise NotImplementedError

    parent = stub_modules(("tacker", "tacker.vnfm",
                           "tacker.vnfm.lcm_user_data"))
    for leaf in ("abstract_user_data", "utils"):
        module = types.ModuleType("tacker.vnfm.lcm_user_data." + leaf)
        sys.modules[module.__name__] = module
        setattr(parent, leaf, module)
    sys.modules["tacker.vnfm.lcm_user_data.abstract_user_data"] \
        .AbstractUserData = AbstractUserData
    # v2: Tacker's standard user data, derived from its AbstractUserData.
    parent = stub_modules((
        "tacker", "tacker.sol_refactored",
        "tacker.sol_refactored.infra_drivers",
        "tacker.sol_refactored.infra_drivers.openstack"))
    for leaf in ("userdata_utils", "userdata_standard"):
        module = types.ModuleType(parent.__name__ + "." + leaf)
        sys.modules[module.__name__] = module
        setattr(parent, leaf, module)
        module.AbstractUserData = AbstractUserData
    sys.modules[parent.__name__ + ".userdata_standard"].StandardUserData = \
        type("StandardUserData", (AbstractUserData,), {
            "instantiate": staticmethod(lambda *args: {})})

sys.path.append(root)
try:
    module = importlib.import_module(module_name)
except BaseException as exc:
    result["error"] = "importing it fails: %s: %s" % (
        type(exc).__name__, exc)
else:
    klass = getattr(module, class_name, None)
    if not isinstance(klass, type):
        result["error"] = "it defines no class %s" % class_name
    elif not issubclass(klass, AbstractUserData):
        result["error"] = ("%s is not a subclass of Tacker's "
                           "AbstractUserData" % class_name)
    elif "instantiate" in getattr(klass, "__abstractmethods__", ()) or \
            not callable(getattr(klass, "instantiate", None)):
        result["error"] = "%s does not implement instantiate" % class_name
print(json.dumps(result))
'''


def check(csar: Csar, user_data: UserData,
          v2: bool = False) -> tuple[str | None, bool]:
    """(problem or None, whether Tacker was replaced by stand-ins); ``v2``:
    the class must derive from Tacker's v2 AbstractUserData."""
    where = (f'{user_data.request}: {user_data.path} '
             f'({user_data.class_name or "no class named"})')
    if not user_data.class_name:
        return f'{where}: lcm-operation-user-data-class is not set', False
    with tempfile.TemporaryDirectory(prefix='kmgmt-userdata-') as root:
        _extract_dir(csar, PurePosixPath(user_data.path).parent, Path(root))
        outcome = _probe(Path(root), user_data, 'v2' if v2 else 'v1')
    if 'error' in outcome:
        return f'{where}: {outcome["error"]}', bool(outcome.get('stubbed'))
    return None, bool(outcome.get('stubbed'))


def _extract_dir(csar: Csar, directory: PurePosixPath, root: Path) -> None:
    # The module may import its neighbours, so its whole directory.
    for name in csar.names:
        if PurePosixPath(name).parent == directory:
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(csar.read(name))


def _probe(root: Path, user_data: UserData, api: str) -> dict:
    argv = [sys.executable, '-c', _PROBE, str(root), user_data.module,
            user_data.class_name, api]
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=TIMEOUT, cwd=root, check=False)
    except subprocess.TimeoutExpired:
        return {'error': f'importing it did not finish in {TIMEOUT} s'}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (done.stderr.strip().splitlines() or ['no output'])[-1]
        return {'error': f'the import check failed: {tail}'}
