"""The README's self-contained code blocks run as written (the quickstart and the lowering
example); a README that lies is a bug."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
SELF_CONTAINED = [b for b in BLOCKS if b.lstrip().startswith("import")]


def test_readme_has_runnable_examples():
    assert len(SELF_CONTAINED) >= 2


@pytest.mark.parametrize("code", SELF_CONTAINED, ids=lambda c: c.split("\n")[0][:40])
def test_readme_example_runs(code):
    exec(compile(code, str(README), "exec"), {})
