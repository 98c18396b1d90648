"""README.rst is what operators read first: it must render cleanly."""
from pathlib import Path

import docutils.core
import docutils.utils

README = Path(__file__).resolve().parents[2] / 'README.rst'


def test_readme_renders_without_warnings():
    docutils.core.publish_doctree(
        README.read_text(encoding='utf-8'),
        settings_overrides={'halt_level': docutils.utils.Reporter.INFO_LEVEL
                            + 1, 'report_level': 5})


def test_readme_starts_with_the_demo_and_names_the_test_command():
    text = README.read_text(encoding='utf-8')
    assert text.index('tools/demo.sh') < text.index('Install into Tacker')
    assert 'python -m pytest tests' in text
