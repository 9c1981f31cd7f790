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

    def chain(self, n: int) -> object:
        ir, mhlo = self.ir, self.mhlo
        with self.ctx, self.ir.Location.unknown():
            t = ir.RankedTensorType.get((8,), ir.F32Type.get())

        def body(x, y):
            for i in range(n):
                x = mhlo.AddOp(x, y).result if i % 2 == 0 else mhlo.MulOp(x, y).result
            return [x]
        return self._module([t, t], body)

    def mlp(self, layers: int, width: int = 64, batch: int = 8) -> object:
        ir, mhlo = self.ir, self.mhlo
        with self.ctx, self.ir.Location.unknown():
            f32 = ir.F32Type.get()
            t_x = ir.RankedTensorType.get((batch, width), f32)
            t_w = ir.RankedTensorType.get((width, width), f32)
            t_b = ir.RankedTensorType.get((width,), f32)

        def dense_i64(xs):
            return ir.DenseIntElementsAttr.get(np.asarray(xs, np.int64),
                                               type=ir.RankedTensorType.get(
                                                   (len(xs),), ir.IntegerType.get_signless(64)))

        def body(x, w, bias):
            zero = mhlo.ConstantOp(ir.DenseElementsAttr.get(np.array(0, np.float32))).result
            dn = mhlo.DotDimensionNumbers.get(
                lhs_batching_dimensions=[], rhs_batching_dimensions=[],
                lhs_contracting_dimensions=[1], rhs_contracting_dimensions=[0])
            for _ in range(layers):
                y = mhlo.DotGeneralOp(t_x, x, w, dn).result
                bb = mhlo.BroadcastInDimOp(t_x, bias, dense_i64([1])).result
                y = mhlo.AddOp(y, bb).result
                zz = mhlo.BroadcastInDimOp(t_x, zero, dense_i64([])).result
                x = mhlo.MaxOp(y, zz).result
            return [x]
        return self._module([t_x, t_w, t_b], body)

    def const(self, arr) -> object:
        ir, mhlo = self.ir, self.mhlo

        def body():
            return [mhlo.ConstantOp(ir.DenseElementsAttr.get(arr)).result]
        return self._module([], body)
