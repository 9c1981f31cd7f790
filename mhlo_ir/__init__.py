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

from . import dtypes
from .attributes import (ArrayAttr, Attribute, BoolAttr, DenseArrayAttr, DictionaryAttr,
                         FloatAttr, IntegerAttr, StringAttr, SymbolRefAttr, TypeAttr, UnitAttr,
                         i32_attr, i64_attr, to_attribute)
from .builder import Builder
from .dense import DenseElementsAttr, dense, dense_i64
from .dialect import MHLO, Dialect
from .dtypes import (ALL_ELEMENT_TYPES, ElementType, bf16, complex64, complex128, element_type,
                     f4E2M1FN, f8E3M4, f8E4M3, f8E4M3B11FNUZ, f8E4M3FN, f8E4M3FNUZ, f8E5M2,
                     f8E5M2FNUZ, f8E8M0FNU, f16, f32, f64, from_numpy, i1, i2, i4, i8, i16, i32,
                     i64, ui2, ui4, ui8, ui16, ui32, ui64)
from .errors import IRError, ModuleVerificationError, OpBuildError
from .ir import Block, BlockArgument, Function, Module, Operation, OpResult, Region, Value
from .location import (UNKNOWN, CallSiteLoc, FileLineColLoc, FusedLoc, Location, NameLoc,
                       UnknownLoc, loc)
from .mhlo_attributes import (ChannelHandle, ConvDimensionNumbers, DotDimensionNumbers,
                              EnumAttr, GatherDimensionNumbers, OutputOperandAlias,
                              ScatterDimensionNumbers, comparison_direction, comparison_type,
                              fft_type, precision, rng_algorithm, rng_distribution, transpose)
from .ops import REGISTRY as OP_TABLE
from .printer import print_module
from .types import (FunctionType, TensorType, TokenType, TupleType, Type, function_type, tensor,
                    token, tuple_type)
from .verifier import verify_module

__version__ = "0.1.0"
