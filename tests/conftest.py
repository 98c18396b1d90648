"""Suite-wide rules.

With ``KMGMT_REQUIRE_LAB=1`` (set by CI) a lab test that would be skipped
(not root, no network namespaces) fails instead: CI must never pass
without having exercised the lab.
"""
import os
import uuid

import pytest

# The slowest modules, dispatched first when pytest-xdist runs the suite
# in lanes (CI: ``-n 2 --dist loadscope``: a module's tests stay in one
# lane, in order, and its module fixtures are built once); the others
# follow in file order, the unit tests last.
SLOWEST_FIRST = (
    'test_tacker_lifecycle_lab', 'test_tacker_cnf_story_lab',
    'test_tacker_v2_lab', 'test_tacker_autoheal_lab',
    'test_tacker_upgrade_lab', 'test_tacker_registry_lab',
    'test_readme_session_lab', 'test_lifecycle_lab',
    'test_resume_lab', 'test_bystanders_lab', 'test_tacker_services_lab',
    'test_demo_lab', 'test_one_process_lab',
)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_lane_order)


def _module_name(item) -> str:
    return item.nodeid.partition('::')[0].rpartition('/')[2].removesuffix(
        '.py')


def _lane_order(item) -> tuple[int, int]:
    name = _module_name(item)
    if name in SLOWEST_FIRST:
        return 0, SLOWEST_FIRST.index(name)
    return (1 if item.get_closest_marker('lab') else 2), 0


def pytest_terminal_summary(terminalreporter):
    """Each module's seconds (setup, call and teardown of its tests), the
    slowest first: what SLOWEST_FIRST and the lanes are balanced on."""
    seconds: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, 'when', None) and hasattr(report, 'duration'):
                module = report.nodeid.partition('::')[0]
                seconds[module] = seconds.get(module, 0.0) + report.duration
    if not seconds:
        return
    terminalreporter.section('seconds per module')
    for module, total in sorted(seconds.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f'{total:8.1f}  {module}')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if (report.skipped and item.get_closest_marker('lab')
            and os.environ.get('KMGMT_REQUIRE_LAB') == '1'):
        report.outcome = 'failed'
        report.longrepr = (f'lab test skipped but KMGMT_REQUIRE_LAB=1: '
                           f'{report.longrepr}')


@pytest.fixture(scope='session', autouse=True)
def _session_redaction_scope():
    # Like a lab or CLI process: a long-lived scope (lab passwords), in
    # which each hook opens its own.
    from kubernetes_mgmt import redact
    with redact.operation('test session'):
        yield


@pytest.fixture(autouse=True)
def _test_redaction_scope(_session_redaction_scope):
    # What one test registers does not change what another test shows.
    from kubernetes_mgmt import redact
    with redact.operation('test'):
        yield


@pytest.fixture(autouse=True)
def _private_state_key(tmp_path_factory):
    # The key that signs stored driver state lives beside tacker.conf on a
    # site; tests keep theirs (one per session) out of /etc.
    from oslo_config import cfg

    import kubernetes_mgmt.conf  # noqa: F401  (registers the options)
    # A default, not an override: lab.driving.driver_options clears the
    # overrides it set when it ends.
    path = tmp_path_factory.getbasetemp() / 'state-key' / 'state.key'
    default = cfg.CONF.kubernetes_mgmt.state_key_file
    cfg.CONF.set_default('state_key_file', str(path), 'kubernetes_mgmt')
    # The generations each test's instances reached are its own (tests
    # reuse instance ids); made only when a test stores state.
    generations = tmp_path_factory.getbasetemp() / 'state-generations' / \
        uuid.uuid4().hex
    cfg.CONF.set_default('state_generation_dir', str(generations),
                         'kubernetes_mgmt')
    yield
    cfg.CONF.set_default('state_key_file', default, 'kubernetes_mgmt')
    cfg.CONF.set_default('state_generation_dir', None, 'kubernetes_mgmt')


@pytest.fixture(scope='session')
def tacker_site():
    """OpenStack's control plane with Tacker 16 and the plugin from this
    checkout, started once per session in a root of its own; stopped and
    removed at the end (a test may stop it earlier: down is
    idempotent). A developer may name a root already running with
    ``KMGMT_LAB_SERVICES`` (``kubernetes-mgmt lab tacker up``): the
    session then uses it and leaves it running."""
    from kubernetes_mgmt_lab.testing import unavailable_reason

    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    import shutil
    import tempfile

    from kubernetes_mgmt_lab.openstack import site
    from kubernetes_mgmt_lab.openstack.layout import Root
    from kubernetes_mgmt_lab.openstack.state import ServicesState

    running = os.environ.get('KMGMT_LAB_SERVICES')
    if running:
        yield ServicesState.load(Root(os.path.abspath(running)))
        return

    checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = tempfile.mkdtemp(prefix='kos-test-', dir='/var/tmp')
    try:
        yield site.up(root, checkout)
    finally:
        if os.path.exists(os.path.join(root, 'openstack.json')):
            site.down(root)
        _keep_logs(Root(root))
        shutil.rmtree(root, ignore_errors=True)


def _keep_logs(root) -> None:
    """``KMGMT_KEEP_SITE_LOGS``: a directory that receives each session
    site's service logs (Tacker, Heat...) before the site is removed,
    for a failure seen only in a full run."""
    import shutil

    keep = os.environ.get('KMGMT_KEEP_SITE_LOGS')
    if keep and os.path.isdir(root.log_dir()):
        shutil.copytree(root.log_dir(), os.path.join(
            keep, os.path.basename(root.path)), dirs_exist_ok=True)


@pytest.fixture(scope='session')
def site(tacker_site) -> str:
    """The services root whose real Heat holds the VNF stacks of the
    tests that call the driver's hooks directly."""
    return tacker_site.root
