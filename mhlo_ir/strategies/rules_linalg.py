"""Rules for the linear-algebra chapter: dot_general with drawn batch and contracting
dimensions, dot, einsum, fft, cholesky, triangular_solve, the batch norms and top-k.

Float and complex results of these ops are sums in an order each executor chooses, so they
mark the program "reassociates"; the factorizations and transforms also "approximate".
"""

from __future__ import annotations


from .. import dtypes
from ..types import tensor
from .scope import Skip
from .table import rule

_NUMERIC = ("sint", "uint", "float", "complex")
_PRECISIONS = ("DEFAULT", "HIGH", "HIGHEST")
# No dot algorithm: XLA:CPU takes them on f16/bf16/f32/f64 dots it hands to its dot
# emitter, but a dot it emits elementwise (a small one, in some fusions) fails to compile:
# "Algorithm not supported by the ElementalIrEmitter: ALG_DOT_BF16_BF16_F32".


def precision_config(s):
    """None (most often), or one precision per operand: dot, dot_general and convolution
    take them; XLA:CPU computes every precision alike."""
    if not s.c.boolean(0.3):
        return None
    return [s.c.choice(_PRECISIONS), s.c.choice(_PRECISIONS)]


def _inexact(s, et, approximate=False):
    if et.kind in ("float", "complex"):
        s.gen.traits.add("reassociates")
        if approximate:
            s.gen.traits.add("approximates")


def _dot_operand(et) -> bool:
    """Element types a dot of one type is drawn on: 8 bits and more, and 4-bit integers
    (XLA:CPU runs i4 x i4 -> i4, wrapping; 2-bit dots are table.REFUSED; a 4-bit float's one
    significand bit would leave the executors' sums apart by more than rounding)."""
    return et.kind in _NUMERIC and (et.bits >= 8 or et.bits == 4 and et.kind != "float")


@rule("dot_general")
def _dot_general(s, name):
    lhs = s.operand(_dot_operand, lambda t: 1 <= t.rank <= 3)
    r = lhs.type.rank
    roles = [s.c.choice(("batch", "contract", "free")) for _ in range(r)]
    batch = [d for d in range(r) if roles[d] == "batch"]
    contract = [d for d in range(r) if roles[d] == "contract"]
    rhs_parts = [("b", d) for d in batch] + [("c", d) for d in contract]
    rhs_parts += [("f", s.gen.dim(1)) for _ in range(s.c.integer(0, 1))]
    order = s.c.permutation(len(rhs_parts))
    rhs_shape, rb, rc = [], {}, {}
    for pos, i in enumerate(order):
        kind, v = rhs_parts[i]
        rhs_shape.append(lhs.type.shape[v] if kind in ("b", "c") else v)
        if kind == "b":
            rb[v] = pos
        elif kind == "c":
            rc[v] = pos
    rhs = s.value_of(tensor(tuple(rhs_shape), lhs.type.element_type))
    _inexact(s, lhs.type.element_type)
    return [s.b.dot_general(lhs, rhs, (contract, [rc[d] for d in contract]),
                            (batch, [rb[d] for d in batch]),
                            precision_config=precision_config(s))]


@rule("dot")
def _dot(s, name):
    lhs = s.operand(_dot_operand, lambda t: 1 <= t.rank <= 2)
    k = lhs.type.shape[-1]
    rshape = (k,) if s.c.boolean() else (k, s.gen.dim(1))
    _inexact(s, lhs.type.element_type)
    rhs = s.value_of(tensor(rshape, lhs.type.element_type))
    return [s.b.dot(lhs, rhs, precision_config=precision_config(s))]


@rule("einsum")
def _einsum(s, name):
    lhs = s.operand(lambda et: et.kind in ("sint", "float") and et.bits >= 16,
                    lambda t: 1 <= t.rank <= 3)
    letters = "abc"[:lhs.type.rank]
    sizes = dict(zip(letters, lhs.type.shape))
    shared = s.c.subset(list(letters), 1)
    new = "xy"[:s.c.integer(0, 1)]
    for ch in new:
        sizes[ch] = s.gen.dim(1)
    rhs_letters = shared + list(new)
    rhs_letters = "".join(rhs_letters[i] for i in s.c.permutation(len(rhs_letters)))
    contracted = set(s.c.subset(shared, 0, len(shared)))
    out = [ch for ch in letters + new if ch not in contracted]
    out = "".join(out[i] for i in s.c.permutation(len(out)))
    rhs = s.value_of(tensor(tuple(sizes[ch] for ch in rhs_letters), lhs.type.element_type))
    _inexact(s, lhs.type.element_type)
    return [s.b.einsum(lhs, rhs, f"{letters},{rhs_letters}->{out}")]


@rule("fft")
def _fft(s, name):
    kind = s.c.choice(("FFT", "IFFT", "RFFT", "IRFFT"))
    if kind == "RFFT":
        x = s.operand(lambda et: et in (dtypes.f32, dtypes.f64), lambda t: t.rank >= 1)
    else:
        x = s.operand(lambda et: et.kind == "complex", lambda t: t.rank >= 1)
    n = s.c.integer(1, min(3, x.type.rank))
    lengths = list(x.type.shape[-n:])
    if 0 in lengths:
        raise Skip("empty transform")
    if kind == "IRFFT":
        lengths[-1] = max(1, 2 * (lengths[-1] - 1)) if s.c.boolean() else 2 * lengths[-1] - 1
        if lengths[-1] // 2 + 1 != x.type.shape[-1]:
            raise Skip("no IRFFT length fits")
    if any(v == 0 for v in lengths):
        raise Skip("empty transform")
    _inexact(s, x.type.element_type, True)
    return [s.b.fft(x, kind, lengths)]


def _square(s, kinds=("float", "complex")):
    return s.operand(lambda et: et.kind in kinds and et.bits >= 32,
                     lambda t: t.rank >= 2 and t.shape[-1] == t.shape[-2] and t.shape[-1] > 0)


@rule("cholesky")
def _cholesky(s, name):
    a = _square(s)
    _inexact(s, a.type.element_type, True)
    return [s.b.cholesky(a, lower=s.c.choice((None, True, False)))]


@rule("triangular_solve")
def _triangular_solve(s, name):
    a = _square(s)
    n = a.type.shape[-1]
    left = s.c.boolean()
    k = s.gen.dim(1)
    shape = a.type.shape[:-2] + ((n, k) if left else (k, n))
    rhs = s.value_of(tensor(shape, a.type.element_type))
    transposes = ("NO_TRANSPOSE", "TRANSPOSE") + (
        ("ADJOINT",) if a.type.element_type.kind == "complex" else ())
    _inexact(s, a.type.element_type, True)
    return [s.b.triangular_solve(a, rhs, left_side=left, lower=s.c.boolean(),
                                 unit_diagonal=s.c.boolean(),
                                 transpose_a=s.c.choice(transposes))]


def _features(s):
    x = s.operand(lambda et: et in (dtypes.f32, dtypes.f64, dtypes.f16, dtypes.bf16),
                  lambda t: t.rank >= 2)
    fi = s.c.integer(0, x.type.rank - 1)
    vec = tensor((x.type.shape[fi],), x.type.element_type)
    _inexact(s, x.type.element_type, True)
    return x, fi, vec, s.c.choice((1e-3, 1e-5, 0.5))


@rule("batch_norm_inference")
def _bn_inference(s, name):
    x, fi, vec, eps = _features(s)
    ops = [s.value_of(vec) for _ in range(4)]
    return [s.b.batch_norm_inference(x, *ops, epsilon=eps, feature_index=fi)]


@rule("batch_norm_training")
def _bn_training(s, name):
    x, fi, vec, eps = _features(s)
    return list(s.b.batch_norm_training(x, s.value_of(vec), s.value_of(vec), epsilon=eps,
                                        feature_index=fi))


@rule("batch_norm_grad")
def _bn_grad(s, name):
    x, fi, vec, eps = _features(s)
    ops = [s.value_of(vec) for _ in range(3)]
    return list(s.b.batch_norm_grad(x, *ops, s.value_of(x.type), epsilon=eps,
                                    feature_index=fi))


def _top_k_operand(s):
    return s.operand(lambda et: et.kind in ("sint", "uint", "float"), lambda t: t.rank >= 1)


@rule("topk")
def _topk(s, name):
    x = _top_k_operand(s)
    out = s.b.topk(x, s.c.integer(0, x.type.shape[-1]), largest=s.c.choice((None, True, False)))
    return list(out)


@rule("chlo.top_k")
def _chlo_top_k(s, name):
    x = _top_k_operand(s)
    return list(s.b.chlo_top_k(x, s.c.integer(0, x.type.shape[-1])))


@rule("trace")
def _trace(s, name):
    s.b.trace(s.pick(), f"t{s.c.integer(0, 9)}")
    return []


