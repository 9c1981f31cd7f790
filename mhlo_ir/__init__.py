"""mhlo_ir: build XLA programs as MHLO in pure Python and print them as MLIR text.

Depends on numpy, attrs and ml_dtypes only; never imports MLIR Python bindings. Typical use::

    import numpy as np
    import mhlo_ir as hlo

    m = hlo.Module("example")
    f = m.add_function("main", [hlo.tensor((2, 3), hlo.f32)], visibility="public")
    b = f.builder()
    (x,) = f.arguments
    b.return_(b.tanh(b.add(x, b.constant(np.ones((2, 3), np.float32)))))
    print(m.to_text())
"""

import importlib as _importlib

from . import dtypes
from .attributes import (ArrayAttr, Attribute, BoolAttr, DenseArrayAttr, DictionaryAttr,
                         FloatAttr, IntegerAttr, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr,
                         i32_attr, i64_attr, parse_attribute, to_attribute)
from .dense import DenseElementsAttr, dense, dense_i64
from .index_array import IndexArrayAttr, index_ints
from .dialect import MHLO, STABLEHLO, Dialect
from .dtypes import (ALL_ELEMENT_TYPES, ElementType, bf16, complex64, complex128, element_type,
                     f4E2M1FN, f8E3M4, f8E4M3, f8E4M3B11FNUZ, f8E4M3FN, f8E4M3FNUZ, f8E5M2,
                     f8E5M2FNUZ, f8E8M0FNU, f16, f32, f64, from_numpy, i1, i2, i4, i8, i16, i32,
                     i64, ui2, ui4, ui8, ui16, ui32, ui64)
from .errors import IRError, ModuleVerificationError, OpBuildError
from .ir import Block, BlockArgument, Function, Module, Operation, OpResult, Region, Value
from .location import (UNKNOWN, CallSiteLoc, FileLineColLoc, FusedLoc, Location, NameLoc,
                       UnknownLoc, loc, parse_location)
from .syntax import ParseError
from .types import (FunctionType, TensorType, TokenType, TupleType, Type, function_type,
                    parse_type, tensor, token, tuple_type)

__version__ = "0.1.0"

# NOTE: the op table (every chapter of ops/), the builder, MHLO's structured attributes, the
# printer and the verifier are most of this package's import time; they load on first use
# (PEP 562) instead: Function.builder(), Module.to_text() and Module.verify() import what they
# need, and these names stay importable from here.
_LAZY = {
    "Builder": ("builder", "Builder"),
    "OP_TABLE": ("ops", "REGISTRY"),
    "print_module": ("printer", "print_module"),
    "verify_module": ("verifier", "verify_module"),
    "parse": ("parser", "parse"),
    "parse_modules": ("parser", "parse_modules"),
    "parse_file": ("parser", "parse_file"),
    "merge_modules": ("merge", "merge_modules"),
    "HostCallback": ("ops.host_callbacks", "HostCallback"),
    **{name: ("mhlo_attributes", name) for name in (
        "ChannelHandle", "ConvDimensionNumbers", "DotAlgorithm", "DotDimensionNumbers", "EnumAttr",
        "GatherDimensionNumbers", "OutputOperandAlias", "ScatterDimensionNumbers",
        "comparison_direction", "comparison_type", "fft_type", "precision", "rng_algorithm",
        "rng_distribution", "transpose")},
}
# ... and so do the submodules that used to load with the package (mhlo_ir.builder, ...).
_LAZY_MODULES = frozenset(module for module, _ in _LAZY.values() if "." not in module)


def __getattr__(name: str):
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), attr)
    elif name in _LAZY_MODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *_LAZY, *_LAZY_MODULES})
