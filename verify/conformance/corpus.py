"""The corpus: which files, how a file splits into modules, and each file's op family."""

from __future__ import annotations

import random
import re
from pathlib import Path

__all__ = ["DEFAULT_DIR", "find_files", "split_modules", "sample"]

DEFAULT_DIR = Path("/work/shared/data/stablehlo_testdata")

# MLIR's --split-input-file marker, as mhlo_ir.parser reads it.
_SPLIT = re.compile(r"^// -----[^\n]*$", re.M)


def find_files(root) -> list:
    """Every ``.mlir`` file under ``root`` (subfolders included), sorted by relative path;
    ``root`` may also be one file."""
    root = Path(root)
    if root.is_file():
        return [root]
    if not root.is_dir():  # (a mistyped path is no empty corpus)
        raise FileNotFoundError(f"no such file or directory: {root}")
    return sorted(root.rglob("*.mlir"), key=lambda p: p.relative_to(root).as_posix())


def split_modules(text: str) -> list:
    """The modules of a file split by ``// -----`` lines, each padded with blank lines so that
    line numbers in errors stay the file's (what ``mhlo_ir.parse_modules`` does, module by
    module, so that one module the parser refuses does not hide the others)."""
    out = []
    start = 0
    for m in list(_SPLIT.finditer(text)) + [None]:
        end = len(text) if m is None else m.start()
        piece = "\n" * text.count("\n", 0, start) + text[start:end]
        if piece.strip():
            out.append(piece)
        if m is not None:
            start = m.end()
    return out


def sample(files: list, n: int, seed: int = 0) -> list:
    """``n`` of ``files``, chosen reproducibly for ``seed``, in their original order."""
    if n < 0:
        raise ValueError(f"a sample of {n} files: give a count of 0 or more")
    if n >= len(files):
        return list(files)
    chosen = set(random.Random(seed).sample(range(len(files)), n))
    return [f for i, f in enumerate(files) if i in chosen]
