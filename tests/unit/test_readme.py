"""README.rst is what operators read first: it must render cleanly."""
from pathlib import Path

import docutils.core
import docutils.utils

README = Path(__file__).resolve().parents[2] / 'README.rst'
LAB_README = README.parent / 'lab' / 'README.rst'
DOCS = sorted((README.parent / 'docs').glob('*.rst'))


def test_readme_renders_without_warnings():
    for path in (README, LAB_README, *DOCS):
        docutils.core.publish_doctree(
            path.read_text(encoding='utf-8'), source_path=str(path),
            settings_overrides={'halt_level': docutils.utils.Reporter.
                                INFO_LEVEL + 1, 'report_level': 5})


def test_readme_starts_with_the_demo_and_names_the_test_command():
    text = README.read_text(encoding='utf-8')
    assert text.index('tools/demo.sh') < text.index('Install into Tacker')
    assert 'python -m pytest tests' in text


def test_readme_install_steps_are_ones_that_work():
    text = README.read_text(encoding='utf-8')
    # The plugin is not on PyPI: the README must not send people there.
    assert 'pip install tacker-kubernetes-mgmt' not in text
    assert 'pip install /path/to/kubernetes-mgmt' in text
    # The venv the tools make is the one the README names.
    bootstrap = (README.parent / 'tools' / 'bootstrap.sh').read_text()
    assert 'venv=${1:-/opt/kubernetes-mgmt/venv}' in bootstrap
    lab = LAB_README.read_text(encoding='utf-8')
    assert '/opt/kubernetes-mgmt/venv' in lab
    assert 'lab exec master-0 -- kubectl get nodes' in lab


def test_readme_says_what_the_demo_and_ci_need_and_run():
    text = README.read_text(encoding='utf-8')
    demo = text[:text.index('\nInstall into Tacker\n')]
    tests = text[text.index('\nRunning the tests\n'):]
    for section in (demo, tests):
        assert 'package registries' in section
        assert 'minutes' in section
    assert 'sudo kubernetes-mgmt demo' in demo
    assert 'then the Tacker suite' in tests
    assert 'tox -e tacker' in (README.parent / '.ci' / 'run').read_text()
