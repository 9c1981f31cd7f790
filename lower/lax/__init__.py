"""The numpy-like API of the tracing front end, by family (``from lower import lax``).

The core (elementwise, shapes, reductions, dot) lives in ``lower.tracing``; each module of this
package adds a family (control flow, indexing, random, collectives...) and is imported here,
in name order, so adding a family is adding a file.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from ..tracing import *  # noqa: F401,F403
from ..tracing import (abs, add, and_, atan2, bind, broadcast_in_dim, broadcast_to,  # noqa: F401
                       cbrt, ceil, clamp, clz, concatenate, convert_element_type, cos, digamma,
                       div, dot, dot_general, eq, erf, erf_inv, exp, exp2, expm1, floor, ge,
                       gt, imag, integer_pow, iota, is_finite, le, lgamma, log, log1p,
                       logistic, lt, make_jaxpr, max, min, mul, ne, neg, nextafter, not_,
                       or_, population_count, pow, real, reduce_and, reduce_max, reduce_min,
                       reduce_or, reduce_prod, reduce_sum, reduce_xor, rem, reshape, round,
                       rsqrt, select_n, shift_left, shift_right_arithmetic,
                       shift_right_logical, sign, sin, slice, sqrt, sub, tan, tanh, transpose,
                       where, xor)

for _m in sorted(m.name for m in _pkgutil.iter_modules(__path__)):
    _mod = _importlib.import_module(f"{__name__}.{_m}")
    globals().update({k: getattr(_mod, k) for k in getattr(_mod, "__all__", ())})
