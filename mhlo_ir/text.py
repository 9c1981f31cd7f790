"""Escaping of user-chosen strings, so that no name or string can change a module's structure.

MLIR string literals take printable ASCII as is, except ``"`` and ``\\``; every other byte of the
UTF-8 encoding is written ``\\XX``. That is exactly what MLIR's own printer emits, so escaped
strings round-trip byte for byte. Symbol names that are not bare identifiers are printed as
quoted strings (``@"my fn"``), as MLIR does.

An MLIR string holds bytes, not necessarily UTF-8 (JAX's Triton calls put a compressed proto
in a backend_config). A str holds such bytes as Python's ``surrogateescape`` does: each byte
that is not part of UTF-8 is the code point U+DC80 + (byte - 0x80), written back as that
byte (``string_bytes`` gives them).
"""

from __future__ import annotations

import re

__all__ = ["escape_string", "quote", "symbol_name", "is_bare_identifier", "check_string",
           "check_attr_name", "string_bytes", "bytes_string"]

_SAFE = re.compile(r'[ !#-\[\]-~]*')  # printable ASCII without '"' (0x22) and '\' (0x5C)
_ESCAPES = {b: f"\\{b:02X}" for b in range(256)}
_ESCAPES.update({b: chr(b) for b in range(0x20, 0x7F) if chr(b) not in '"\\'})
_ESCAPES[0x5C] = "\\\\"
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")


def string_bytes(s: str) -> bytes:
    """The bytes an MLIR string holding ``s`` holds (UTF-8; bytes kept as surrogates)."""
    return s.encode("utf-8", "surrogateescape")


def bytes_string(data: bytes) -> str:
    """The str that holds ``data`` (``string_bytes``'s inverse)."""
    return data.decode("utf-8", "surrogateescape")


def escape_string(s: str) -> str:
    """The body of an MLIR string literal holding ``s`` (without the quotes)."""
    if _SAFE.fullmatch(s):
        return s
    return "".join(_ESCAPES[b] for b in string_bytes(s))


def quote(s: str) -> str:
    """``s`` as a quoted MLIR string literal."""
    return f'"{escape_string(s)}"'


def is_bare_identifier(s: str) -> bool:
    return _BARE.match(s) is not None


def symbol_name(s: str) -> str:
    """``s`` as it follows ``@`` in a symbol reference: bare when it can be, quoted otherwise."""
    return s if _BARE.match(s) else quote(s)


def check_string(s, what: str) -> str:
    """``s`` if it is a str MLIR can hold (no lone surrogates but the U+DC80-U+DCFF that
    stand for bytes), else a clear error naming ``what`` now, rather than an encoding error
    at print time."""
    if not isinstance(s, str):
        raise TypeError(f"{what} must be a str, got {type(s).__name__} {s!r:.60}")
    if not s.isascii():
        try:
            string_bytes(s)
        except UnicodeEncodeError as e:
            raise ValueError(f"{what} {s!r:.60} holds a lone surrogate at index {e.start}, "
                             "which no UTF-8 spells (U+DC80-U+DCFF stand for bytes that are "
                             "not UTF-8: text.bytes_string)") from None
    return s


# What a reserved name's value comes from (see check_attr_name).
_FIELDS = {"sym_name": "name", "function_type": "argument and result types",
           "arg_attrs": "arg_attrs", "res_attrs": "res_attrs",
           "sym_visibility": "visibility (a Function's; a Module keeps none, and jaxlib "
                             "compiles the same without it: leave it out)"}


def check_attr_name(name, what: str = "attribute name", dialect: bool = False,
                    reserved: frozenset = frozenset()) -> str:
    """``name`` if MLIR accepts it as an attribute name here, else a clear ValueError.

    Always: a non-empty UTF-8 string. With ``dialect``, it must carry a dialect prefix
    (``mhlo.sharding``): MLIR requires one on a module's attributes ("'builtin.module' op
    can only contain attributes with dialect-prefixed names") and we require one on function
    argument and result attributes, as MLIR's function interface expects. ``reserved`` names
    are the ones the printer writes itself (``sym_name``, ``function_type``...): a second copy
    in the dictionary is an error in jaxlib ("is an inferred attribute and should not be
    specified").
    """
    check_string(name, what)
    if not name:
        raise ValueError(f"{what} must not be empty")
    if name in reserved:
        field = _FIELDS.get(name, "fields")
        raise ValueError(f"{what} {name!r} is reserved: the printer writes it from the "
                         f"object's own {field}")
    if dialect and "." not in name.lstrip("."):
        raise ValueError(f"{what} {name!r} has no dialect prefix: MLIR requires one here "
                         "(e.g. 'mhlo.num_partitions', 'mhlo.sharding', 'jax.result_info')")
    return name
