"""The peer in ``python -m lower.bench``: the same programs built with the MLIR Python bindings
inside jaxlib. It lives in verify/ because lower/ and mhlo_ir/ never import MLIR bindings."""

from __future__ import annotations

import numpy as np


class Mlir:
    """Builds the benchmark's programs with jaxlib's MLIR bindings (JaxlibMissing without)."""

    def __init__(self) -> None:
        from ._jaxlib import require
        ir = require("jaxlib.mlir.ir")
        _jax_mlir_ext = require("jaxlib.mlir._mlir_libs._jax_mlir_ext")
        func = require("jaxlib.mlir.dialects.func")
        mhlo = require("jaxlib.mlir.dialects.mhlo")
        self.ir, self.func, self.mhlo = ir, func, mhlo
        self.ctx = ir.Context()
        reg = ir.DialectRegistry()
        _jax_mlir_ext.register_dialects(reg)
        self.ctx.append_dialect_registry(reg)
        self.ctx.load_all_available_dialects()
        mhlo.register_mhlo_dialect(self.ctx)

    def _module(self, arg_types, body) -> object:
        ir, func = self.ir, self.func
        with self.ctx, ir.Location.unknown():
            module = ir.Module.create()
            with ir.InsertionPoint(module.body):
                ftype = ir.FunctionType.get(arg_types, [])
                fn = func.FuncOp("main", ftype)
                block = fn.add_entry_block()
                with ir.InsertionPoint(block):
                    outs = body(*block.arguments)
                    func.ReturnOp(outs)
                fn.attributes["function_type"] = ir.TypeAttr.get(
                    ir.FunctionType.get(arg_types, [o.type for o in outs]))
            return module

    def parse(self, text: str) -> object:
        """MLIR's C++ parser (and verifier) on ``text``."""
        with self.ctx:
            return self.ir.Module.parse(text)

    def print(self, module) -> str:
        return module.operation.get_asm(print_generic_op_form=True)

    def print_pretty(self, module) -> str:
        """MLIR's default print: ops in their custom forms, no locations. Without the
        verifier ``get_asm`` otherwise runs before a custom form (the generic print skips
        it; a built module has nothing for it to find, and our printer verifies nothing)."""
        return module.operation.get_asm(assume_verified=True)

    def chain(self, n: int, shape=(8,)) -> object:
        ir, mhlo = self.ir, self.mhlo
        with self.ctx, self.ir.Location.unknown():
            t = ir.RankedTensorType.get(shape, ir.F32Type.get())

        def body(x, y):
            for i in range(n):
                x = mhlo.AddOp(x, y).result if i % 2 == 0 else mhlo.MulOp(x, y).result
            return [x]
        return self._module([t, t], body)

    def mlp(self, layers: int, width: int = 64, batch: int = 8) -> object:
        """Per layer: its own weight and bias arguments, a splat zero constant, dot_general,
        broadcast_in_dim of the bias, add, maximum."""
        ir, mhlo = self.ir, self.mhlo
        with self.ctx, self.ir.Location.unknown():
            f32 = ir.F32Type.get()
            t_x = ir.RankedTensorType.get((batch, width), f32)
            t_w = ir.RankedTensorType.get((width, width), f32)
            t_b = ir.RankedTensorType.get((width,), f32)
            dims = self._i64s([1])

        def body(x, *params):
            dn = mhlo.DotDimensionNumbers.get(
                lhs_batching_dimensions=[], rhs_batching_dimensions=[],
                lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
            for i in range(layers):
                w, bias = params[2 * i], params[2 * i + 1]
                zero = mhlo.ConstantOp(ir.DenseElementsAttr.get_splat(
                    t_x, ir.FloatAttr.get(f32, 0.0))).result
                y = mhlo.DotGeneralOp(t_x, x, w, dn).result
                bb = mhlo.BroadcastInDimOp(t_x, bias, dims).result
                y = mhlo.AddOp(y, bb).result
                x = mhlo.MaxOp(y, zero).result
            return [x]
        return self._module([t_x] + [t_w, t_b] * layers, body)

    def reductions(self, n: int, shape=(8, 64)) -> object:
        """``n`` reductions of one argument over its last dimension, each region a block of
        ``add`` or ``maximum`` (a reduce_sum's or reduce_max's), summed as they come."""
        ir, mhlo = self.ir, self.mhlo
        with self.ctx, self.ir.Location.unknown():
            f32 = ir.F32Type.get()
            t = ir.RankedTensorType.get(shape, f32)
            s = ir.RankedTensorType.get((), f32)
            out = ir.RankedTensorType.get(shape[:-1], f32)
            dims = self._i64s([len(shape) - 1])

        def body(x):
            zero = mhlo.ConstantOp(ir.DenseElementsAttr.get(np.array(0, np.float32))).result
            acc = None
            for i in range(n):
                op = mhlo.ReduceOp([out], [x], [zero], dims)
                block = op.body.blocks.append(s, s)
                with ir.InsertionPoint(block):
                    a, c = block.arguments
                    mhlo.ReturnOp([(mhlo.AddOp if i % 2 == 0 else mhlo.MaxOp)(a, c).result])
                acc = op.result if acc is None else mhlo.AddOp(acc, op.result).result
            return [acc]
        return self._module([t], body)

    def small(self, a: int = 4, w: int = 8) -> object:
        """The 20-op module of ``lower.bench_build.ours_small`` (``a`` even)."""
        ir, mhlo = self.ir, self.mhlo
        n = a * a
        with self.ctx, self.ir.Location.unknown():
            f32 = ir.F32Type.get()
            t, u = ir.RankedTensorType.get((a, w), f32), ir.RankedTensorType.get((w, a), f32)
            t16 = ir.RankedTensorType.get((n,), f32)
            i16 = ir.RankedTensorType.get((n,), ir.IntegerType.get_signless(32))
            t44 = ir.RankedTensorType.get((a, a), f32)

        i64s = self._i64s

        def body(x, y):
            one = ir.FloatAttr.get(f32, 1.0)
            c = mhlo.ConstantOp(ir.DenseElementsAttr.get_splat(t, one)).result
            e = mhlo.ExpOp(mhlo.AddOp(x, c).result).result
            dn = mhlo.DotDimensionNumbers.get(
                lhs_batching_dimensions=[], rhs_batching_dimensions=[],
                lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
            d = mhlo.DotGeneralOp(t44, e, y, dn).result
            tt = mhlo.TransposeOp(d, i64s([1, 0])).result
            m = mhlo.MulOp(d, tt).result
            z = mhlo.ConstantOp(ir.DenseElementsAttr.get(np.array(0, np.float32))).result
            zb = mhlo.BroadcastInDimOp(t44, z, i64s([])).result
            p = mhlo.CompareOp(m, zb, mhlo.ComparisonDirectionAttr.get("GT")).result
            s = mhlo.SelectOp(p, m, zb).result
            r = mhlo.ReshapeOp(t16, s).result
            s1 = mhlo.SliceOp(r, i64s([0]), i64s([n // 2]), i64s([1])).result
            s2 = mhlo.SliceOp(r, i64s([n // 2]), i64s([n]), i64s([1])).result
            cc = mhlo.ConcatenateOp([s1, s2], 0).result
            ab = mhlo.AbsOp(cc).result
            cv = mhlo.ConvertOp(t16, mhlo.ConvertOp(i16, cc).result).result
            ng = mhlo.NegOp(mhlo.TanhOp(cv).result).result
            return [mhlo.MaxOp(ng, ab).result]
        return self._module([t, u], body)

    def _i64s(self, xs) -> object:
        ir = self.ir
        with self.ctx:
            return ir.DenseIntElementsAttr.get(
                np.asarray(xs, np.int64),
                type=ir.RankedTensorType.get((len(xs),), ir.IntegerType.get_signless(64)))

    def const(self, arr) -> object:
        """A dense constant of ``arr`` (f32, or bf16 given as ml_dtypes.bfloat16)."""
        ir, mhlo = self.ir, self.mhlo

        def body():
            if arr.dtype.name == "bfloat16":  # the bindings take bf16 as raw 16-bit words
                attr = ir.DenseElementsAttr.get(arr.view(np.uint16), type=ir.BF16Type.get())
            else:
                attr = ir.DenseElementsAttr.get(arr)
            return [mhlo.ConstantOp(attr).result]
        return self._module([], body)
