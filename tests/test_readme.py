"""Every ```python block of the README (and of docs/*.md) runs as written, each on its own, and
every ``>>>`` error shown after one is the error it raises; a README that lies is a bug."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Fences may be indented (a block inside a list item); the closing fence matches the opening.
FENCE = re.compile(r"^([ \t]*)```python[ \t]*\n(.*?)^\1```[ \t]*$", re.S | re.M)
# An indented ``>>> expr`` line and the ``ErrorName: message`` line under it.
SHOWN_ERROR = re.compile(r"^[ \t]+>>> (.+)\n[ \t]+(\w+): (.+)$", re.M)


def _blocks() -> list:
    """(path, first line number, dedented code, offset in the file) for every block."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start(2)) + 1
            found.append((path, line, textwrap.dedent(m.group(2)), m.start()))
    return found


BLOCKS = _blocks()


def _run(path, line, code) -> dict:
    namespace: dict = {"__name__": "__readme__"}
    # Padded so a traceback names the file's own line numbers.
    exec(compile("\n" * (line - 1) + code, str(path), "exec"), namespace)
    return namespace


def test_every_python_fence_is_found():
    # A fence the pattern missed (say, a closing fence indented differently) would silently
    # go untested: count the openings.
    for path in DOCS:
        text = path.read_text()
        openings = len(re.findall(r"^[ \t]*```python", text, flags=re.M))
        assert openings == sum(1 for p, *_ in BLOCKS if p == path), path.name
    assert sum(1 for p, *_ in BLOCKS if p.name == "README.md") >= 3


@pytest.mark.parametrize("path, line, code", [b[:3] for b in BLOCKS],
                         ids=[f"{b[0].name}:{b[1]}" for b in BLOCKS])
def test_example_runs(path, line, code):
    _run(path, line, code)


def _shown_errors() -> list:
    """(path, expression, error name, message, the block above it)."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for m in SHOWN_ERROR.finditer(text):
            above = [b for b in BLOCKS if b[0] == path and b[3] < m.start()]
            assert above, f"{path.name}: '>>> {m.group(1)}' has no code block above it"
            found.append((path, m.group(1), m.group(2), m.group(3), above[-1]))
    return found


SHOWN_ERRORS = _shown_errors()


def test_readme_shows_an_error():
    assert SHOWN_ERRORS


@pytest.mark.parametrize("path, expr, name, message, block", SHOWN_ERRORS,
                         ids=[f"{e[0].name}:{e[1]}" for e in SHOWN_ERRORS])
def test_shown_error_is_raised(path, expr, name, message, block):
    namespace = _run(*block[:3])
    with pytest.raises(Exception) as info:
        eval(expr, namespace)
    assert type(info.value).__name__ == name
    assert str(info.value) == message


def test_the_generator_counts_it_states_are_the_tables():
    from mhlo_ir.strategies.table import EXCLUDED, RULES
    text = (ROOT / "README.md").read_text()
    assert f"({len(RULES)} rules; the {len(EXCLUDED)} ops left out" in text
