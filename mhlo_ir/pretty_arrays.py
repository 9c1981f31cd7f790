"""Custom-form pieces for array-valued attributes (see ``mhlo_ir.pretty_forms``): StableHLO's
``dims = [1, 0]``, slice's ``[1:4:2, 0:5]``, dot_general's ``batching_dims = [0] x [0],
contracting_dims = [2] x [1]``, convolution's ``dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0,
1, f], window = {...}`` and precision lists. Each prints its part of an op and reads it back
into the raw values the op's converters take.
"""

from __future__ import annotations

import attrs

__all__ = ["Dims", "DotDims", "ConvWindow", "SliceRanges", "EnumList", "enum_keyword"]


@attrs.frozen
class Dims:
    """An integer-array attribute as ``[1, 2]`` (StableHLO's ``dims = [...]``)."""

    key: str

    def render(self, pr, op) -> str:
        from .index_array import index_ints
        return "[" + ", ".join(map(str, index_ints(op.attributes[self.key]))) + "]"

    def read(self, r) -> None:
        ts = r.p.ts
        r.attrs[self.key] = ts.comma_list(lambda: ts.integer("an integer"), "]", open="[")


@attrs.frozen
class DotDims:
    """StableHLO dot_general's ``batching_dims = [0] x [0], contracting_dims = [2] x [1]``
    (the batching part left out when there are none)."""

    key: str = "dot_dimension_numbers"

    def render(self, pr, op) -> str:
        dn = op.attributes[self.key]

        def pair(a, b):
            return f"[{', '.join(map(str, a))}] x [{', '.join(map(str, b))}]"

        head = ""
        if dn.lhs_batching_dimensions or dn.rhs_batching_dimensions:
            batching = pair(dn.lhs_batching_dimensions, dn.rhs_batching_dimensions)
            head = f"batching_dims = {batching}, "
        return head + "contracting_dims = " + pair(dn.lhs_contracting_dimensions,
                                                   dn.rhs_contracting_dimensions)

    def read(self, r) -> None:
        from .mhlo_attributes import DotDimensionNumbers
        ts = r.p.ts

        def pair():
            ts.expect("=")
            a = ts.comma_list(lambda: ts.integer("a dimension"), "]", open="[")
            ts.expect("x")
            b = ts.comma_list(lambda: ts.integer("a dimension"), "]", open="[")
            return tuple(a), tuple(b)

        batch = ((), ())
        if ts.accept("batching_dims"):
            batch = pair()
            ts.expect(",")
        ts.expect("contracting_dims")
        contract = pair()
        r.attrs[self.key] = DotDimensionNumbers(batch[0], batch[1], contract[0], contract[1])


# convolution's window entries: (attribute, the name MLIR prints).
_WINDOW = (("window_strides", "stride"), ("padding", "pad"), ("lhs_dilation", "lhs_dilate"),
           ("rhs_dilation", "rhs_dilate"), ("window_reversal", "reverse"))


@attrs.frozen
class ConvWindow:
    """convolution's ``dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window =
    {stride = [2, 1], pad = [[1, 1], [0, 0]], lhs_dilate = .., rhs_dilate = .., reverse = ..}``
    (window entries only for the attributes set)."""

    def render(self, pr, op) -> str:
        a = op.attributes
        dn = a["dimension_numbers"]
        n = len(dn.input_spatial_dimensions)

        def layout(rank, labels):
            out = [""] * rank
            for d, label in labels:
                out[d] = label
            return "[" + ", ".join(out) + "]"

        lhs = layout(n + 2, [(dn.input_batch_dimension, "b"), (dn.input_feature_dimension, "f"),
                             *[(d, str(i)) for i, d in enumerate(dn.input_spatial_dimensions)]])
        rhs = layout(n + 2, [(dn.kernel_input_feature_dimension, "i"),
                             (dn.kernel_output_feature_dimension, "o"),
                             *[(d, str(i)) for i, d in enumerate(dn.kernel_spatial_dimensions)]])
        out = layout(n + 2, [(dn.output_batch_dimension, "b"),
                             (dn.output_feature_dimension, "f"),
                             *[(d, str(i)) for i, d in enumerate(dn.output_spatial_dimensions)]])
        entries = []
        for key, shown in _WINDOW:
            v = a.get(key)
            if v is None:
                continue
            if key == "padding":
                rows = v.to_array().reshape(-1, 2).tolist()
                text = "[" + ", ".join(f"[{lo}, {hi}]" for lo, hi in rows) + "]"
            elif key == "window_reversal":
                bits = v.to_array().reshape(-1).tolist()
                if pr.dialect.name == "stablehlo":
                    text = "[" + ", ".join("true" if b else "false" for b in bits) + "]"
                else:
                    text = "[" + ", ".join("1" if b else "0" for b in bits) + "]"
            else:
                from .index_array import index_ints
                text = "[" + ", ".join(map(str, index_ints(v))) + "]"
            entries.append(f"{shown} = {text}")
        return f"dim_numbers = {lhs}x{rhs}->{out}, window = {{{', '.join(entries)}}}"

    def read(self, r) -> None:
        from .mhlo_attributes import ConvDimensionNumbers
        ts = r.p.ts

        def layout(roles):
            labels = ts.comma_list(lambda: ts.next().text, "]", open="[")
            found = {}
            spatial = {}
            for d, label in enumerate(labels):
                if label in roles:
                    if label in found:
                        raise ts.error(f"'{r.name}': dimension label {label} given twice")
                    found[label] = d
                elif label.isdigit():
                    if int(label) in spatial:
                        raise ts.error(f"'{r.name}': spatial dimension {label} given twice")
                    spatial[int(label)] = d
                else:
                    raise ts.error(f"'{r.name}': unknown dimension label {label!r} (expected "
                                   f"{', '.join(roles)} or a spatial index)")
            if set(found) != set(roles) or sorted(spatial) != list(range(len(spatial))):
                raise ts.error(f"'{r.name}': dimension labels {labels} must name "
                               f"{', '.join(roles)} once and spatial dimensions 0..n-1")
            return found, tuple(spatial[i] for i in range(len(spatial)))

        ts.expect("dim_numbers")
        ts.expect("=")
        lhs, lsp = layout(("b", "f"))
        ts.expect("x")
        rhs, rsp = layout(("i", "o"))
        ts.expect("->")
        out, osp = layout(("b", "f"))
        try:
            r.attrs["dimension_numbers"] = ConvDimensionNumbers(
                lhs["b"], lhs["f"], lsp, rhs["i"], rhs["o"], rsp, out["b"], out["f"], osp)
        except ValueError as e:  # (numbers the layouts' own checks let through)
            raise ts.error(f"'{r.name}': {e}") from None
        ts.expect(",")
        ts.expect("window")
        ts.expect("=")
        names = {shown: key for key, shown in _WINDOW}

        def entry():
            tok = ts.expect_kind("bare", "a window entry (stride, pad, lhs_dilate, "
                                 "rhs_dilate, reverse)")
            key = names.get(tok.text)
            if key is None:
                raise ts.error(f"'{r.name}': unknown window entry {tok.text!r}", tok)
            ts.expect("=")
            if key == "padding":
                r.attrs[key] = ts.comma_list(lambda: ts.comma_list(
                    lambda: ts.integer("a padding amount"), "]", open="["), "]", open="[")
            elif key == "window_reversal":
                def flag():
                    t = ts.next()
                    if t.text in ("true", "1"):
                        return True
                    if t.text in ("false", "0"):
                        return False
                    raise ts.expected("true, false, 1 or 0", t)
                r.attrs[key] = ts.comma_list(flag, "]", open="[")
            else:
                r.attrs[key] = ts.comma_list(lambda: ts.integer("an integer"), "]", open="[")

        ts.comma_list(entry, "}", open="{")


@attrs.frozen
class SliceRanges:
    """StableHLO slice's ``[1:4:2, 0:5]`` (start:limit[:stride], the stride left out when
    it is 1)."""

    def render(self, pr, op) -> str:
        from .index_array import index_ints
        a = op.attributes
        parts = []
        for lo, hi, st in zip(index_ints(a["start_indices"]), index_ints(a["limit_indices"]),
                              index_ints(a["strides"])):
            parts.append(f"{lo}:{hi}" if st == 1 else f"{lo}:{hi}:{st}")
        return "[" + ", ".join(parts) + "]"

    def read(self, r) -> None:
        ts = r.p.ts
        ranges = []

        def one():
            lo = ts.integer("a start index")
            ts.expect(":")
            hi = ts.integer("a limit index")
            st = ts.integer("a stride") if ts.accept(":") else 1
            ranges.append((lo, hi, st))
        ts.comma_list(one, "]", open="[")
        for key, i in (("start_indices", 0), ("limit_indices", 1), ("strides", 2)):
            r.attrs[key] = [x[i] for x in ranges]


@attrs.frozen
class AlgorithmBody:
    """StableHLO dot_general's ``algorithm = <lhs_precision_type = bf16, ...>``: the
    DotAlgorithm's fields without its ``#stablehlo.dot_algorithm`` head."""

    key: str = "algorithm"

    def render(self, pr, op) -> str:
        return f"<{op.attributes[self.key].body()}>"

    def read(self, r) -> None:
        from .mhlo_attributes import DotAlgorithm
        r.attrs[self.key] = DotAlgorithm.parse_body(r.p.ts)


def enum_keyword(ts, key: str) -> str:
    """A bare enum value of a custom form, spelt as MLIR requires: exactly (the custom forms'
    enums are all upper case; the builder's converters take any case, MLIR's parser does not:
    "expected ::mlir::stablehlo::ComparisonDirection to be one of: EQ, NE, ...")."""
    tok = ts.expect_kind("bare", f"a {key} value")
    if tok.text != tok.text.upper():
        raise ts.error(f"expected a {key} value in upper case as MLIR spells it, found "
                       f"'{tok.text}'", tok)
    return tok.text


@attrs.frozen
class EnumList:
    """An array of enums as ``[HIGH, DEFAULT]`` (StableHLO dot's precision)."""

    key: str

    def render(self, pr, op) -> str:
        return "[" + ", ".join(e.value for e in op.attributes[self.key].elements) + "]"

    def read(self, r) -> None:
        ts = r.p.ts
        r.attrs[self.key] = ts.comma_list(lambda: enum_keyword(ts, self.key), "]", open="[")
