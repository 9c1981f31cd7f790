"""XLA as the oracle for mhlo.sharding strings: convert a one-argument module carrying the
string with jaxlib and read back the parameter's sharding from the HLO text.

XLA stops the whole process on some strings (CHECK failures in its sharding parser), so the
conversions run in a child process that is restarted after such a string; that string is
recorded as ``crash``. ``meaning`` turns a sharding (as ``read_sharding`` reads it) into a
value that is equal for two strings exactly when XLA means the same sharding by them:
metadata and spacing do not count, iota device lists are expanded, subgroup dimensions of
size 1 are dropped and those of one kind merged, and a tiling of one tile is a kind (XLA's
own normal form, which is how it prints them back); a named sharding's device order is
compared expanded, since XLA prints its iotas in a normal form of its own."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from mhlo_ir.sharding_text import ShardingSyntaxError, read_sharding

_CHILD = r"""
import json, re, sys
from verify.api import _jaxlib_parse_and_verify

def esc(s):
    return "".join(c if c.isprintable() and c not in '"\\' else "\\%02X" % ord(c) for c in s)

def sharding_of(hlo):
    for line in hlo.splitlines():
        if "parameter(0)" in line:
            i = line.find("sharding={")
            if i < 0:
                return None
            i += len("sharding=")
            depth = 0
            for j in range(i, len(line)):
                depth += {"{": 1, "}": -1}.get(line[j], 0)
                if depth == 0:
                    return line[i:j + 1]
    return "??"

for line in sys.stdin:
    s, t = json.loads(line)
    text = ('module @m attributes {mhlo.num_partitions = 8 : i32} {\n'
            f'  func.func @main(%arg0: {t} {{mhlo.sharding = "{esc(s)}"}}) -> {t} {{\n'
            f'    return %arg0 : {t}\n  }}\n}}\n')
    try:
        out = sharding_of(_jaxlib_parse_and_verify(text).as_hlo_text())
    except Exception as e:
        out = "error: " + str(e).splitlines()[0][:200]
    print(json.dumps(out), flush=True)
"""


def measure(cases: list, *, chunk: int = 200, limit: float = 60.0) -> list:
    """XLA's sharding for each ``(string, type text)``: its HLO text, None (dropped),
    ``error: ...`` (refused), ``crash`` (the process stopped) or ``hang`` (a chunk ran past
    ``limit`` seconds at that string)."""
    out: list = []
    while len(out) < len(cases):
        rest = cases[len(out):len(out) + chunk]
        stdin = "".join(json.dumps(c) + "\n" for c in rest)
        try:
            p = subprocess.run([sys.executable, "-c", _CHILD], text=True, capture_output=True,
                               input=stdin, timeout=limit)
            stdout, failed = p.stdout, p.returncode != 0 and "crash"
        except subprocess.TimeoutExpired as e:
            stdout, failed = e.stdout or "", "hang"
            stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
        got = [json.loads(x) for x in stdout.splitlines() if x.strip()]
        out += got
        if len(got) < len(rest):
            if not failed:
                raise RuntimeError("the child stopped early")
            out.append(failed)
    return out


def _tiled_meaning(s):
    dims, ids, reshape, perm = s.tiles[0]
    if ids is not None:
        devices = np.array(ids).reshape(dims)
    else:
        devices = np.arange(int(np.prod(reshape))).reshape(reshape).transpose(perm)
        devices = devices.reshape(dims)
    kinds = s.subgroup_kinds()
    data = dims[:len(dims) - len(kinds)]
    keep = [i for i, k in enumerate(kinds) if dims[len(data) + i] != 1]
    kinds = [kinds[i] for i in keep]
    devices = devices.reshape(list(data) + [dims[len(data) + i] for i in keep])
    if all(d == 1 for d in data) and len(set(kinds)) <= 1 and \
            (not kinds or kinds[0] != "maximal"):
        return ("kind", kinds[0] if kinds else "replicated")
    order = sorted(range(len(kinds)), key=lambda i: kinds[i])  # (stable: same-kind order kept)
    devices = devices.transpose(list(range(len(data))) + [len(data) + i for i in order])
    kinds = [kinds[i] for i in order]
    sizes = {k: int(np.prod([devices.shape[len(data) + i] for i, kk in enumerate(kinds)
                             if kk == k])) for k in set(kinds)}
    flat = devices.reshape(list(data) + [sizes[k] for k in sorted(sizes)])
    where = {}
    for idx in np.ndindex(*flat.shape):
        sub = tuple(c for c, k in zip(idx[len(data):], sorted(sizes)) if k != "replicated")
        where[int(flat[idx])] = (idx[:len(data)], sub)
    return ("tiled", tuple(data), tuple(sorted(sizes.items())), tuple(sorted(where.items())))


def _mesh_order(devices):
    """A named sharding's device order as XLA means it: its iota expanded (XLA prints iotas in
    a normal form of its own), None for the devices in order."""
    if devices is None or devices[0] != "iota":
        return devices
    _, reshape, perm = devices
    order = tuple(int(d) for d in np.arange(int(np.prod(reshape))).reshape(reshape)
                  .transpose(perm).ravel())
    return None if order == tuple(range(len(order))) else ("list", order)


def _single_meaning(s):
    groups = tuple(s.groups)
    if s.named is not None:
        return ("named", s.named["canonical"], _mesh_order(s.named["devices"]), groups)
    if s.kinds:
        kinds = tuple(dict.fromkeys(s.kinds))
        return (kinds, tuple(s.device), tuple(s.tiles), bool(s.replicate_last),
                tuple(map(tuple, s.subgroups)), groups)
    if len(s.tiles) != 1 or s.device or len(s.subgroups) > 1:
        return ("as written", repr(vars(s)))
    try:
        return _tiled_meaning(s) + (groups,)
    except ValueError:  # (a device list that does not fill its tiles: a meaning of its own)
        return ("as written", repr(vars(s)))


def _normal(s):
    m = _single_meaning(s)
    if isinstance(m[0], tuple) and len(m[0]) == 1 and m[0][0] in ("replicated", "manual",
                                                                  "unknown", "unreduced") \
            and not m[1] and not m[2] and not m[3] and not m[4]:
        return ("kind", m[0][0], m[5])
    return m


def meaning(text: str):
    """What XLA means by ``text`` (see the module's docstring); raises ShardingSyntaxError
    where its parser does not read it."""
    read = read_sharding(text)
    if read is None:
        return meaning("{replicated}")
    if isinstance(read, list):
        return ("tuple", tuple(_normal(s) for s in read))
    return _normal(read)


def xla_keeps(text: str, xla: str | None, leaves: int | None = None) -> bool:
    """Whether XLA's result ``xla`` (from ``measure``) is ``text`` kept in meaning; on a
    tuple of ``leaves`` leaves, a single sharding means itself on every leaf."""
    if xla is None or xla == "crash" or xla == "hang" or xla.startswith("error:"):
        return False
    try:
        want = meaning(text)
    except ShardingSyntaxError:
        return False
    if leaves is not None and want[0] != "tuple":
        want = ("tuple", (want,) * leaves)
    try:
        return meaning(xla) == want
    except ShardingSyntaxError:
        return False


__all__ = ["ShardingSyntaxError", "meaning", "measure", "xla_keeps"]
