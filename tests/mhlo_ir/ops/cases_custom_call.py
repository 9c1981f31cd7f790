"""Cases for custom_call."""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
from tests.mhlo_ir.ops.cases import case, module, rand

f32, i32 = hlo.f32, hlo.i32
T23 = hlo.tensor((2, 3), f32)


# -- custom_call ------------------------------------------------------------------------------

def _top2(x):
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :2].astype(np.int32)
    return [np.take_along_axis(x, idx, -1), idx]


@case("custom_call", "TopK_decomposed_by_xla", reference=_top2)
def _():
    # "TopK" is a target XLA itself rewrites (TopkDecomposer), so it runs on CPU.
    return module([hlo.tensor((2, 5), f32)], lambda b, x: b.custom_call(
        "TopK", [x], [hlo.tensor((2, 2), f32), hlo.tensor((2, 2), i32)])), \
        [np.float32([[3, 1, 4, 1.5, 9], [2, 7, 1, 8, 2.5]])]


@case("custom_call", "Sharding_annotation", reference=lambda x: [x])
def _():
    return module([hlo.tensor((4,), hlo.i64)], lambda b, x: b.custom_call(
        "Sharding", [x], hlo.tensor((4,), hlo.i64), **{"mhlo.sharding": "{replicated}"})), \
        [rand((4,), np.int64)]


@case("custom_call", "api4_dict_config_verified")
def _():
    return module([T23], lambda b, x: b.custom_call(
        "my_target", [x], T23, api_version=4, backend_config={"alpha": 1.5},
        has_side_effect=True)), [rand((2, 3), np.float32)]


@case("custom_call", "defaults_spelled_out")
def _():
    # (MLIR's custom form leaves out the attributes at their defaults; the generic keeps them)
    return module([T23], lambda b, x: b.custom_call(
        "my_target", [x], T23, api_version=1, backend_config="", has_side_effect=False,
        called_computations=[], output_operand_aliases=[])), [rand((2, 3), np.float32)]


@case("custom_call", "jax_ffi_spelling")
def _():
    # JAX's StableHLO spelling of a typed-FFI call (api 1, the dictionary in
    # mhlo.backend_config): MHLO prints it as XLA's conversion does, api 4
    return module([T23], lambda b, x: b.custom_call(
        "my_target", [x], T23, backend_config="", has_side_effect=True,
        **{"mhlo.backend_config": {"alpha": 1.5}})), [rand((2, 3), np.float32)]
