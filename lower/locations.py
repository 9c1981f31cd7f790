"""Locations of lowered ops: an equation's name stack and where in the user's code it came
from, as JAX's lowering writes them (``"jit(f)/add"(callsite("f"("f.py":3:7) at ...))``),
with the caches that make building them per lowering cheap."""

from __future__ import annotations

import itertools
import os
import re
import sys

import mhlo_ir as hlo


def source_info_to_location(primitive, source_info, name_stack, cache=None) -> hlo.Location:
    """``"jit(f)/add"(...)``: the op's name stack and where in the user's code it came from.

    Our own tracer's equations carry one user ``frame``: ``"f.py":3:7``. JAX's carry a
    ``traceback`` (jaxlib's), which becomes what jax.jit's lowering writes: the user's frames
    (jax's and the standard library's left out, as jax's ``is_user_filename`` decides, and
    this package's own) innermost first, each ``"function"("file":line:col to :end)``,
    chained by ``callsite(... at ...)``.

    ``cache`` (a dict; the module context's) shares one Location among equations with the same
    primitive, name stack and source: locations repeat heavily, and building one is costly.
    With a cache, the location is also kept process-wide (``_KEPT``) under the same key and
    jax's settings for locations (``_jax_settings``), which hold all it
    depends on: the primitive's name, both name stacks with each entry's class
    (``stack_key``) and the traceback (jaxlib's compare and hash by their frames' code
    objects and instruction offsets, and hold those code objects) or our tracer's frame. So
    a program lowered again, or another program tracing the same lines of user code (a
    training step and an evaluation step of one model), finds its locations made."""
    frame = getattr(source_info, "frame", None)
    traceback = getattr(source_info, "traceback", None) if frame is None else None
    eqn_stack = getattr(source_info, "name_stack", None)
    where = traceback if frame is None else (frame.file_name, frame.start_line,
                                             frame.start_column)
    inner = getattr(eqn_stack, "stack", eqn_stack)
    stacks = (primitive.name, stack_key(name_stack.stack),
              stack_key(inner) if inner.__class__ is tuple else inner)
    key = (*stacks, where)
    name = None
    if cache is not None:
        hit = cache.get(key)
        if hit is None:
            if traceback is None:
                kept_key = key
            else:
                settings = _traceback_tables(cache).settings
                kept_key = (key, settings) if settings is not None else None
            try:
                hit = _KEPT.get(kept_key) if kept_key is not None else None
            except TypeError:  # (a stack entry that does not hash: this lowering's alone)
                kept_key, hit = None, None
            if hit is not None:
                cache[key] = hit
        if hit is not None:
            return hit
        name = cache.get(stacks)  # the name part, shared by all of a traceback's equations
    if name is None:
        # The stacks' text is shared by every primitive under them (JAX's NameStack adds
        # and prints in Python): keyed by the two stacks alone.
        names = cache.get(("names", *stacks[1:])) if cache is not None else None
        if names is None:
            names = str(name_stack + eqn_stack) if eqn_stack is not None else str(name_stack)
            if cache is not None:
                cache[("names", *stacks[1:])] = names
        name = f"{names}/{primitive.name}" if names else primitive.name
        if cache is not None:
            cache[stacks] = name
    if frame is not None:
        loc = hlo.NameLoc(name, hlo.FileLineColLoc(frame.file_name or "-", frame.start_line,
                                                   frame.start_column))
    elif traceback is not None:
        # One traceback (a line of user code) is shared by the several equations it traced:
        # its callsite chain is built once.
        chain = cache.get(("tb", traceback), _NO_CHAIN) if cache is not None else _NO_CHAIN
        if chain is _NO_CHAIN:
            chain = _traceback_location(traceback, cache)
            if cache is not None:
                cache[("tb", traceback)] = chain
        # Distinct tracebacks of one line share their chain (see _traceback_location), so
        # equations with the same name there share one NameLoc; the chain is held by the
        # cache, so its id is not reused while the entry lives.
        named = _traceback_tables(cache).named if cache is not None else {}
        loc = named.get((name, id(chain)))
        if loc is None:
            loc = named[(name, id(chain))] = hlo.NameLoc(name, chain)
    else:
        loc = hlo.NameLoc(name)
    if cache is not None:
        cache[key] = loc
        if kept_key is not None:
            if len(_KEPT) >= _KEPT_LIMIT:
                _KEPT.clear()
            _KEPT[kept_key] = loc
    return loc


# (primitive name, outer stack key, equation stack key, frame), or for a traceback
# ((..., traceback), jax's settings) -> its Location, across lowerings (see
# source_info_to_location and _jax_settings); a pure function of the key, bounded.
_KEPT: dict = {}
_KEPT_LIMIT = 16384


def _jax_settings():
    """What jax.jit's locations depend on besides a traceback, as jax reads them for each
    lowering: the exclusion and inclusion patterns of ``is_user_filename`` (which
    ``register_exclusion``/``register_inclusion`` replace; a library may call them on import,
    between two lowerings; compiled patterns compare and hash by their text), the
    ``jax_traceback_in_locations_limit`` (frames kept; negative: 1,000) and the
    ``jax_hlo_source_file_canonicalization_regex`` (removed from file names). Without jax:
    every file is the user's, ``_FRAME_LIMIT`` frames, names as they are. None where this
    jax has none of them where we look (nothing is then kept across lowerings)."""
    util = sys.modules.get("jax._src.source_info_util")
    if util is None:
        return ((None, None), _FRAME_LIMIT, "")
    try:
        config = sys.modules["jax._src.config"]
        limit = config.traceback_in_locations_limit.value
        pattern = config.hlo_source_file_canonicalization_regex.value or ""
        return ((util._exclude_path_regex(), util._include_path_regex()),
                limit if limit >= 0 else 1000, pattern)
    except Exception:  # noqa: BLE001 - another jax's internals
        return None


def stack_key(stack: tuple) -> tuple:
    """A name stack's entries as a key that tells apart what prints apart: JAX's
    ``Scope("jvp")`` (a ``named_scope``) and ``Transform("jvp")`` are equal named tuples
    with one hash, but print as ``jvp`` and ``jvp()``; so every entry that is not a str is
    keyed with its class."""
    for entry in stack:
        if entry.__class__ is not str:
            return tuple([e if e.__class__ is str else (e.__class__, e) for e in stack])
    return stack


_NO_CHAIN = object()  # a traceback not seen yet (None: one without user frames)
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# The lowering benchmark's workloads are what user code is there: their frames are located
# as a user's are (JAX's lowering, measured beside ours, locates them too).
_USER_FILES_HERE = frozenset({_OWN_DIR + "bench_lowering.py"})
_FRAME_LIMIT = 100  # jax's jax_traceback_in_locations_limit default (without jax)


def _is_user_file(filename: str) -> bool:
    if filename.startswith(_OWN_DIR) and filename not in _USER_FILES_HERE:
        return False
    util = sys.modules.get("jax._src.source_info_util")
    check = getattr(util, "is_user_filename", None)
    return check(filename) if check is not None else True


def _traceback_location(traceback, cache) -> hlo.Location | None:
    """The callsite chain of a jaxlib Traceback's user frames (None if it has none).

    ``cache`` (the module context's) keeps, per code object, whether its file is the user's
    and, per (code, instruction), the frame's location. A traceback has ~20 frames, nearly
    all jax's own and shared with the program's other tracebacks, so the frames are judged
    in bulk: code objects map to their verdict through one dict keyed by ``id`` (C-level
    ``map``; hashing a code object would hash its bytecode), and only user frames take the
    Python loop. The cache holds every code object it has an entry for, so an id in it is
    not reused while it lives. Chains that share their outer frames share those links."""
    codes, lastis = traceback.raw_frames()
    if cache is None:
        cache = {}
    tables = _traceback_tables(cache)
    user, frame_locs, links = tables.user, tables.frames, tables.links
    flags = list(map(user.get, map(id, codes)))
    if None in flags:
        for i, flag in enumerate(flags):
            if flag is None:
                code = codes[i]
                flag = user.get(id(code))  # the same code twice in one traceback
                if flag is None:
                    flag = user[id(code)] = bool(_is_user_file(code.co_filename))
                    tables.held.append(code)
                flags[i] = flag
    settings = tables.settings
    limit, pattern = settings[1:] if settings is not None else (_FRAME_LIMIT, "")
    if True not in flags or limit <= 0:
        return None
    frames = []
    addr2location = None
    for code, lasti in itertools.compress(zip(codes, lastis), flags):
        key = (id(code), lasti)
        loc = frame_locs.get(key)
        if loc is None:
            if addr2location is None:
                addr2location = type(traceback).code_addr2location
            line, col, end_line, end_col = addr2location(code, lasti)
            if line is None or line < 0:
                loc = frame_locs[key] = False
            else:
                has_end = end_col is not None and end_col >= 0
                col = max(col, 0)
                filename = code.co_filename
                if pattern:  # (jax_hlo_source_file_canonicalization_regex, as jax applies it)
                    filename = re.sub(pattern, "", filename)
                if not filename and not (has_end and (
                        end_col != col or end_line not in (None, line))):
                    # Code compiled without a file name: a range keeps "" (as JAX writes
                    # it), a point is what MLIR makes of "" there, "-" (see FileLineColLoc).
                    filename = "-"
                file = hlo.FileLineColLoc(filename, line, col,
                                          end_line if has_end else None,
                                          end_col if has_end else None)
                name = getattr(code, "co_qualname", code.co_name)  # co_qualname: 3.11
                loc = frame_locs[key] = hlo.NameLoc(name, file)
        if loc is not False:
            frames.append(loc)
            if len(frames) >= limit:
                break
    if not frames:
        return None
    loc = frames[-1]
    for callee in reversed(frames[:-1]):
        # Keyed by the two locations' identities: both are held by the cache already.
        key = (id(callee), id(loc))
        link = links.get(key)
        if link is None:
            link = links[key] = hlo.CallSiteLoc(callee, loc)
        loc = link
    return loc


class _TracebackTables:
    """What one lowering learns from JAX's tracebacks, kept in its location cache: per code
    object (by id) whether its file is the user's, and the code objects judged (held, so
    those ids are not reused); per (id(code), lasti) a frame's location, or False; per
    (id(callee), id(caller chain)) a CallSiteLoc link; per (name, id(chain)) a NameLoc; and
    jax's settings the lowering's locations follow (``_jax_settings``, read once, as jax
    reads them once a lowering)."""

    __slots__ = ("user", "held", "frames", "links", "named", "settings")

    def __init__(self):
        self.user, self.held, self.frames, self.links, self.named = {}, [], {}, {}, {}
        self.settings = _jax_settings()


def _traceback_tables(cache: dict) -> _TracebackTables:
    tables = cache.get(_TracebackTables)  # the class itself: a key no other entry uses
    if tables is None:
        tables = cache[_TracebackTables] = _TracebackTables()
    return tables
