"""XLA's named (mesh) shardings in ``mhlo.sharding`` text: ``{maximal_mesh[device_id=0]}`` and
``{mesh["x"=4,"y"=2], device_ids=([2,4]T(1,0)), [{"x"}, {}], replicated={"y"}}``, read as
XLA's ``ParseMesh`` / ``ParseSingleSharding(NamedSharding)`` read them (hlo_parser.cc).

Measured with jaxlib 0.10.2: axis names must be quoted (``mesh[a=2]`` is dropped), and so
is a ``device_ids`` iota written unlike a tile assignment's (``[2,2]`` without ``T(...)``,
``[4]T(0)``); an axis the mesh does not name, an axis used twice, a ``device_ids`` list of
the wrong length or one listing the devices in order (``(0,1,2,3)``: "Non-iota device
assignment has iota device id list") stop XLA's process (CHECK failures), so each is refused
here. Sub-axes (``"x":(1)2``) are read;
an axis written twice in any form is refused (XLA's overlap rule for sub-axes is not
modelled: a conservative refusal).
"""

from __future__ import annotations

from .sharding_lexer import ShardingSyntaxError, Tokens

__all__ = ["read_named"]

_SPECIAL = ("replicated", "unreduced", "manual")


def _axis_name(tk: Tokens) -> str:
    if not tk.at("string"):
        raise ShardingSyntaxError(f"expected a quoted mesh axis name, found {tk.show()}")
    return tk.take("string")


def _perm_problem(reshape: list, perm: list) -> str | None:
    if sorted(perm) != list(range(len(reshape))):
        return f"T({','.join(map(str, perm))}) is not a permutation of {len(reshape)} dimensions"
    return None


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def read_named(tk: Tokens, metadata) -> dict:
    """One named sharding after its ``{`` (``tk`` at ``mesh`` or ``maximal_mesh``), through its
    ``}``: a dict with ``canonical`` (XLA's printed form), ``rank`` (dimension shardings, or
    None for a form that fits any rank) and ``problem`` (why XLA would not keep it, or None).
    ``metadata`` reads a ``metadata=`` value."""
    word = tk.take("ident")
    problem = None
    tk.take("punct", "[")
    if word == "maximal_mesh":
        if tk.take("attr", what="'device_id='") != "device_id":
            raise ShardingSyntaxError("expected device_id= in maximal_mesh")
        device = tk.take("int", what="a device id")
        tk.take("punct", "]")
        if tk.eat("punct", ","):
            if tk.take("attr", what="'metadata='") != "metadata":
                raise ShardingSyntaxError("expected metadata= after maximal_mesh[...],")
            metadata(tk)
        tk.take("punct", "}")
        if device < 0:
            problem = f"device id {device} is negative"
        return {"canonical": f"{{maximal_mesh[device_id={device}]}}", "rank": None,
                "problem": problem}
    axes, sizes = [], []
    if not tk.at("punct", "]"):
        while True:
            axes.append(_axis_name(tk))
            tk.take("punct", "=")
            sizes.append(tk.take("int", what="an axis size"))
            if not tk.eat("punct", ","):
                break
    tk.take("punct", "]")
    parts = ["mesh[" + ",".join(f"'{a}'={s}" for a, s in zip(axes, sizes)) + "]"]
    if len(set(axes)) != len(axes):
        problem = "the mesh names an axis twice"
    elif any(s <= 0 for s in sizes):
        problem = f"mesh axis sizes {sizes} are not all positive"
    tk.eat("punct", ",")
    if tk.at("attr", "device_ids"):
        tk.take("attr")
        tk.take("punct", "(")
        if tk.eat("punct", "["):
            reshape = tk.ints()
            tk.take("punct", "]")
            perm = list(range(len(reshape)))
            # (as a tile assignment's iota: XLA drops the sharding when a reshape of several
            # dimensions has no T(...), or one of one dimension has one)
            if len(reshape) > 1:
                tk.take("ident", "T", "'T(' after a device_ids reshape of several dimensions")
            if len(reshape) > 1 or tk.at("ident", "T"):
                if len(reshape) == 1:
                    raise ShardingSyntaxError("T(...) after a device_ids reshape of one "
                                              "dimension")
                tk.take("punct", "(")
                perm = tk.ints()
                tk.take("punct", ")")
            why = _perm_problem(reshape, perm) if len(perm) == len(reshape) else \
                f"T(...) has {len(perm)} entries for {len(reshape)} reshape dimensions"
            if why is None and _prod(reshape) != _prod(sizes):
                why = f"device_ids iota of {_prod(reshape)} devices for a mesh of {_prod(sizes)}"
            problem = problem or why
            text = f"[{','.join(map(str, reshape))}]"
            if perm != list(range(len(reshape))):
                text += f"T({','.join(map(str, perm))})"
            else:
                text = None  # (the devices in order: XLA prints no device_ids)
        else:
            ids = tk.ints(")")
            if len(ids) != _prod(sizes):
                problem = problem or (f"device_ids has {len(ids)} ids for a mesh of "
                                      f"{_prod(sizes)} devices")
            elif len(set(ids)) != len(ids) or any(d < 0 for d in ids):
                problem = problem or "device_ids are not distinct non-negative ids"
            elif ids == list(range(len(ids))):  # (a CHECK in XLA: the process stops)
                problem = problem or (f"device_ids ({','.join(map(str, ids))}) list the "
                                      "devices in order, which XLA aborts on (\"Non-iota "
                                      "device assignment has iota device id list\"): leave "
                                      "device_ids out")
            text = ",".join(map(str, ids))
        tk.take("punct", ")")
        if text is not None:
            parts.append(f"device_ids=({text})")
        tk.eat("punct", ",")
    used: list = []

    def axis_refs(close: str, open_ok: bool) -> str:
        refs = []
        while not tk.at("punct", close):
            if refs:
                tk.take("punct", ",")
            if open_ok and tk.eat("punct", "?"):
                refs.append("?")
                if not tk.at("punct", close):
                    raise ShardingSyntaxError("an axis after '?' in a dimension sharding")
                continue
            name = _axis_name(tk)
            used.append(name)
            ref = f"'{name}'"
            if tk.eat("punct", ":"):
                tk.take("punct", "(")
                pre = tk.take("int")
                tk.take("punct", ")")
                ref += f":({pre}){tk.take('int')}"
            refs.append(ref)
        tk.take("punct", close)
        return "{" + ", ".join(refs) + "}"

    rank = None
    if tk.at("ident") and tk.peek()[1] in _SPECIAL:
        parts.append(tk.take("ident"))
    else:
        tk.take("punct", "[")
        dims = []
        while not tk.at("punct", "]"):
            if dims:
                tk.take("punct", ",")
            tk.take("punct", "{")
            dims.append(axis_refs("}", True))
        tk.take("punct", "]")
        rank = len(dims)
        parts.append("[" + ", ".join(dims) + "]")
    while not tk.at("punct", "}"):
        tk.take("punct", ",", "',' or '}'")
        name = tk.take("attr", what="replicated=, unreduced=, manual= or metadata=")
        if name == "metadata":
            metadata(tk)
        elif name in _SPECIAL and rank is not None:
            tk.take("punct", "{")
            refs = axis_refs("}", False)
            if refs != "{}":  # (XLA prints no empty list)
                parts.append(f"{name}={refs}")
        else:
            raise ShardingSyntaxError(f"unexpected {name}= in a named sharding")
    tk.take("punct", "}")
    unknown = [a for a in used if a not in axes]
    if problem is None and unknown:
        problem = f"axis {unknown[0]!r} is not an axis of the mesh {axes}"
    if problem is None and len(set(used)) != len(used):
        problem = "an axis is used twice"
    return {"canonical": "{" + ", ".join(parts) + "}", "rank": rank, "problem": problem}
