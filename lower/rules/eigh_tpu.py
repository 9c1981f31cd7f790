"""``eigh`` on TPU beyond the Jacobi solver's size, as jax 0.10.2 computes it: QDWH-based
spectral divide and conquer (Nakatsukasa and Higham 2013, "Stable and efficient spectral divide
and conquer algorithms for the symmetric eigenvalue decomposition and the SVD").

A Hermitian block is split around a pivot (the median of its diagonal): the polar factor U of
``H - pivot I`` (QDWH, ``lower.rules.polar.qdwh``) gives the projector ``(I - U) / 2`` onto the
eigenvectors below the pivot, whose rank is its trace; a subspace iteration (QR of the
projector's largest columns, then at most one more round) finds isometries V- and V+ onto the
two eigenspaces, and ``V-^H H V-``, ``V+^H H V+`` are the two smaller blocks. Blocks of at most
``TERMINATION_SIZE`` go to XLA's Jacobi ``Eigh`` (unsorted: the order of a padded block's
eigenvalues is kept); blocks that are nearly diagonal, or tiny against the whole matrix, stop
there with their diagonal.

XLA has no recursion, so (as in jax) the recursion is a ``while`` loop over a stack of
``(offset, size)`` subproblems. The blocks live in one N x N workspace, left-aligned at their
offset's row (at the end its first column holds the eigenvalues), the eigenvectors in another.
A block's size is dynamic: each iteration pads it up to the smallest static "bucket" that holds
it (``_buckets``) and a ``switch`` picks the code for that bucket, so a 150-row block is not
worked on at N x N.

``subset_by_index`` drops the subproblems whose eigenvalues fall outside it; the eigenvalues
are sorted at the end (for ``sort_eigenvalues`` or a subset), their vectors with them. Unlike
jax 0.10.2, the places of dropped eigenvalues are filled with -inf or +inf, so that they sort
outside the subset (jax leaves stale workspace entries there, which can sort into it).
"""

from __future__ import annotations

import numpy as np

from .. import lax as L
from ..lax.linalg import _adjoint, _complex, _real_dtype
from ..tracing import as_tracer
from .decompositions import _eye, tri
from .polar import _frobenius, _mm, batch_map, check_subset, mask, qdwh

# Blocks up to this size go to the Jacobi solver (jax's termination_size).
TERMINATION_SIZE = 256
# Bucket sizes below N shrink by this factor, rounded up to this granularity (jax's).
_BUCKET_SHRINK, _BUCKET_GRANULE = 1.98, 32
# The subspace iteration's rounds (jax's maxiter).
_SUBSPACE_ITERATIONS = 2
_INT32_MAX = np.iinfo(np.int32).max


# -- padded blocks -----------------------------------------------------------------------------

def _slice(x, starts, sizes, static_sizes):
    """The ``sizes`` block of ``x`` at ``starts``, zero-padded to ``static_sizes``: ``x`` is
    padded first, so the slice is never clamped back into range."""
    padded = L.pad(x, 0, [(0, s, 0) for s in static_sizes])
    out = L.dynamic_slice(padded, starts, static_sizes, allow_negative_indices=False)
    return mask(out, sizes)


def _update_slice(x, update, starts, sizes):
    """``x`` with its block at ``starts`` overwritten by the ``sizes`` corner of ``update``
    (the rest of ``update`` is padding and leaves ``x`` as it was)."""
    padded = L.pad(x, 0, [(0, s, 0) for s in update.shape])
    old = L.dynamic_slice(padded, starts, update.shape, allow_negative_indices=False)
    padded = L.dynamic_update_slice(padded, mask(update, sizes, old), starts,
                                    allow_negative_indices=False)
    return L.slice(padded, (0,) * x.ndim, x.shape)


def _diag(x):
    """The diagonal of a square matrix (a strided slice of its rows laid end to end)."""
    n = x.shape[0]
    return L.slice(L.reshape(x, (n * n,)), (0,), (n * n,), (n + 1,))


def _column(v):
    return L.reshape(v, (v.shape[0], 1))


def _scalar(x, i):
    return L.reshape(L.dynamic_slice(x, (i,), (1,), allow_negative_indices=False), ())


def _argsort(keys):
    """Stable ascending order (NaNs last), as ``jnp.argsort``."""
    return L.sort([keys, L.iota(keys, np.int32, keys.shape, 0)], num_keys=1)[1]


def _take(x, idx, axis: int):
    """``x`` indexed by ``idx`` along ``axis`` (0 for a vector, 1 for a matrix's columns)."""
    other = tuple(d for d in range(x.ndim) if d != axis)
    dn = L.GatherDimensionNumbers(offset_dims=other, collapsed_slice_dims=(axis,),
                                  start_index_map=(axis,))
    sizes = tuple(1 if d == axis else x.shape[d] for d in range(x.ndim))
    return L.gather(x, L.reshape(idx, (idx.shape[0], 1)), dn, sizes, mode="promise_in_bounds")


def _nanmedian(x):
    """The median of ``x``'s non-NaN entries (the mean of the two middle ones for an even
    count), as ``jnp.nanmedian``."""
    s = L.sort(x)
    count = L.reduce_sum(L.convert_element_type(L.not_(L.ne(s, s)), x.dtype))
    last = L.sub(count, 1)
    pos = L.mul(0.5, last)

    def at(i):
        i = L.max(0.0, L.min(i, last))
        return _scalar(s, L.convert_element_type(i, np.int32))
    return L.mul(L.add(at(L.floor(pos)), at(L.ceil(pos))), 0.5)


# -- one split ---------------------------------------------------------------------------------

def _subspace(p, h, n, rank, *, swap: bool):
    """Isometries ``(v1, v2)`` onto the range of the rank-``rank`` projector ``p`` and onto
    its complement (swapped with ``swap``); ``h`` (the block) measures convergence."""
    big = p.shape[0]
    keys = mask(L.neg(_frobenius(p, axes=1)), (n,), np.nan)
    x = mask(_take(p, _argsort(keys), 1), (n, rank))
    eps = float(np.finfo(_real_dtype(p.dtype)).eps)
    thresh = L.mul(10.0 * eps, _frobenius(h))

    def split(x):
        q, _ = L.qr(x, full_matrices=True)
        v1 = mask(q, (n, rank))
        v2 = _slice(q, (0, rank), (n, L.sub(n, rank)), (big, big))
        return v1, v2, _frobenius(_mm(_mm(_adjoint(v2), h), v1))

    def again(state):
        v1, _, j, _ = state
        v1, v2, err = split(_mm(p, v1))
        return v1, v2, L.add(j, 1), err

    v1, v2, err = split(x)
    v1, v2, _, _ = L.while_loop(
        lambda s: L.and_(L.lt(s[2], _SUBSPACE_ITERATIONS), L.gt(s[3], thresh)), again,
        (v1, v2, np.int32(1), err))
    return (v2, v1) if swap else (v1, v2)


def _split_spectrum(h, n, pivot, v0):
    """``(h_minus, v_minus, h_plus, v_plus, rank)``: the block ``h`` (true size n) split into
    the eigenspaces below and above ``pivot``; ``v0 @ v`` for each isometry v."""
    big = h.shape[0]
    eye = _eye(h, pivot.dtype, (big, big))
    shifted = L.sub(h, L.convert_element_type(L.mul(pivot, eye), h.dtype))
    u = qdwh(shifted, dynamic_shape=(n, n))[0]
    ident = mask(_eye(h, h.dtype, (big, big)), (n, n))
    p_minus = L.mul(-0.5, L.sub(u, ident))
    on_diag = L.eq(L.iota(h, np.int32, (big, big), 0), L.iota(h, np.int32, (big, big), 1))
    trace = L.reduce_sum(L.where(on_diag, L.real(p_minus) if h.dtype.kind == "c" else p_minus,
                                 0.0))
    rank_minus = L.convert_element_type(L.round(trace, 1), np.int32)
    p_plus = L.mul(0.5, L.add(u, ident))
    rank_plus = L.sub(n, rank_minus)
    # The subspace iteration runs on the projector of smaller rank (a cheaper QR).
    v_minus, v_plus = L.cond(
        L.lt(rank_plus, rank_minus),
        lambda: _subspace(p_plus, h, n, rank_plus, swap=True),
        lambda: _subspace(p_minus, h, n, rank_minus, swap=False))
    h_minus = _mm(_mm(_adjoint(v_minus), h), v_minus)
    h_plus = _mm(_mm(_adjoint(v_plus), h), v_plus)
    return h_minus, _mm(v0, v_minus), h_plus, _mm(v0, v_plus), rank_minus


# -- the work loop -----------------------------------------------------------------------------

def _buckets(n: int) -> list:
    """The static block sizes: the Jacobi size, N, then N / 1.98 rounded up to 32, halving
    while above the Jacobi size (jax's schedule: a block split a little off its middle does
    not fall back into the N bucket)."""
    cutoff = min(n, TERMINATION_SIZE)
    sizes = [cutoff]
    if n > TERMINATION_SIZE:
        sizes.append(n)
        i = int(n / _BUCKET_SHRINK)
        while i > cutoff:
            sizes.append(-(-i // _BUCKET_GRANULE) * _BUCKET_GRANULE)
            i //= 2
    return sizes


def _eigh_work(h, subset):
    """``(eigenvalues, eigenvectors)`` of the Hermitian ``h`` (N x N), in no particular
    order; blocks wholly outside ``subset`` are not decomposed (their eigenvalues are -inf or
    +inf, their vectors garbage)."""
    n = h.shape[0]
    cplx = h.dtype.kind == "c"
    eps = float(np.finfo(_real_dtype(h.dtype)).eps)
    norm0 = _frobenius(h)

    def push(stack, offset, size):
        count, offsets, sizes = stack
        return (L.add(count, 1),
                L.dynamic_update_slice(offsets, L.reshape(offset, (1,)), (count,),
                                       allow_negative_indices=False),
                L.dynamic_update_slice(sizes, L.reshape(size, (1,)), (count,),
                                       allow_negative_indices=False))

    def maybe(start, size, new, old):
        """``new`` (the block at ``start`` pushed) if the block's eigenvalues (those numbered
        ``start`` to ``start + size``) meet the subset, else ``old`` with -inf (or +inf)
        where they would have been, so that they sort below (or above) the subset.

        (jax 0.10.2 leaves whatever the workspace held there, the parent block's first
        column, which can sort into the subset and shift it: wrong eigenvalues. Where it
        does not, the two give the same bits.)"""
        if subset is None:
            return new
        end = L.add(start, size)
        above = L.convert_element_type(L.gt(end, subset[0]), _real_dtype(h.dtype))
        fill = L.mul(L.sub(L.mul(above, 2), 1), np.inf)  # -inf below the subset, +inf above
        stack, blocks, vecs = old
        column = L.convert_element_type(L.broadcast_in_dim(fill, (n, 1), ()), h.dtype)
        old = stack, _update_slice(blocks, column, (start, 0), (size, 1)), vecs
        return L.cond(L.and_(L.lt(start, subset[1]), L.gt(end, subset[0])),
                      lambda: new, lambda: old)

    def base(big, offset, b, stack, blocks, vecs):
        # The Jacobi solver keeps the order of the eigenvalues (unsorted), so the padded
        # block's (zero padding: zero eigenvalues) first b are the true block's.
        blk = mask(_slice(blocks, (offset, 0), (b, b), (big, big)), (b, b))
        v = _slice(vecs, (0, offset), (n, b), (n, big))
        ev, w = L.eigh(blk, sort_eigenvalues=False)
        ev = _mm(v, mask(ev, (b, b)))
        w = L.convert_element_type(mask(w, (b,)), h.dtype)
        blocks = _update_slice(blocks, _column(w), (offset, 0), (b, 1))
        vecs = _update_slice(vecs, ev, (0, offset), (n, b))
        return stack, blocks, vecs

    def divide(big, offset, b, stack, blocks, vecs):
        blk = _slice(blocks, (offset, 0), (b, b), (big, big))

        def diagonal(stack, blocks, vecs):
            return stack, _update_slice(blocks, _column(_diag(blk)), (offset, 0), (b, 1)), vecs

        def split(stack, blocks, vecs):
            v = _slice(vecs, (0, offset), (n, b), (n, big))
            pivot = _nanmedian(mask(_diag(L.real(blk) if cplx else blk), (b,), np.nan))
            h_minus, v_minus, h_plus, v_plus, rank = _split_spectrum(blk, b, pivot, v)
            mid = L.add(offset, rank)
            rest = L.sub(b, rank)
            stack, blocks, vecs = maybe(
                offset, rank,
                (push(stack, offset, rank),
                 _update_slice(blocks, h_minus, (offset, 0), (rank, rank)),
                 _update_slice(vecs, v_minus, (0, offset), (n, rank))),
                (stack, blocks, vecs))
            return maybe(
                mid, rest,
                (push(stack, mid, rest),
                 _update_slice(blocks, h_plus, (mid, 0), (rest, rest)),
                 _update_slice(vecs, v_plus, (0, mid), (n, rest))),
                (stack, blocks, vecs))

        # Nearly diagonal, or only noise next to the whole matrix: the diagonal is the
        # eigenvalues (this ends clusters of equal eigenvalues; Nakatsukasa and Higham 5.2).
        norm = _frobenius(blk)
        real_diag = _diag(L.real(blk)) if cplx else _diag(blk)
        diag_matrix = L.where(
            L.eq(L.iota(blk, np.int32, (big, big), 0), L.iota(blk, np.int32, (big, big), 1)),
            L.broadcast_in_dim(L.convert_element_type(real_diag, h.dtype), (big, big), (0,)),
            0)
        off_norm = _frobenius(L.sub(blk, diag_matrix))
        stop = L.or_(L.le(off_norm, L.mul(5 * eps, norm)),
                     L.lt(norm, L.mul(eps, norm0)))
        return L.cond(stop, diagonal, split, stack, blocks, vecs)

    sizes = _buckets(n)
    branches = [lambda *a, s=sizes[0]: base(s, *a)]
    branches += [lambda *a, s=s: divide(s, *a) for s in sizes[1:]]
    table = as_tracer(h.builder, np.asarray(sizes, np.int32))

    def step(state):
        (count, offsets, sizes_), blocks, vecs = state
        top = L.sub(count, 1)
        offset, b = _scalar(offsets, top), _scalar(sizes_, top)
        # The smallest bucket that holds the block.
        choice = L.argmin(L.where(L.lt(table, b), _INT32_MAX, table), 0)
        return L.switch(choice, branches, offset, b, (top, offsets, sizes_), blocks, vecs)

    # The stack holds the whole matrix, (0, n).
    first = np.zeros(n + 1, np.int32)
    first[0] = n
    stack = (np.int32(1), np.zeros(n + 1, np.int32), first)
    _, blocks, vecs = L.while_loop(lambda s: L.ne(s[0][0], 0), step,
                                   (stack, h, _eye(h, h.dtype, (n, n))))
    return L.reshape(L.slice(blocks, (0, 0), (n, 1)), (n,)), vecs


# -- the primitive -----------------------------------------------------------------------------

def _hermitian_from_triangle(x, lower: bool):
    """The Hermitian matrices that ``x``'s lower (or upper) triangles describe; the imaginary
    part of the diagonal is dropped, as jax's QDWH eigh does."""
    n = x.shape[-1]
    nb = x.ndim - 2

    def batched(m):
        return L.broadcast_in_dim(m, x.shape, (nb, nb + 1))
    xt = L.transpose(x, (*range(nb), nb + 1, nb))
    keep = batched(tri(x, (n, n), 0) if lower else L.not_(tri(x, (n, n), -1)))
    if x.dtype.kind != "c":
        return L.where(keep, x, xt)
    re = L.where(keep, L.real(x), L.real(xt))
    strict = batched(tri(x, (n, n), -1) if lower else L.not_(tri(x, (n, n), 0)))
    im = L.where(strict, L.imag(x), 0)
    im = L.where(keep, im, L.neg(L.transpose(im, (*range(nb), nb + 1, nb))))
    return _complex(re, im)


def _eigh_one(h, *, sort_eigenvalues: bool, subset):
    """``(v, w)`` of one Hermitian matrix larger than the Jacobi size."""
    w, v = _eigh_work(h, subset)
    w = L.real(w) if h.dtype.kind == "c" else w
    if not (sort_eigenvalues or subset is not None):
        return v, w
    order = _argsort(w)
    if subset is not None:
        order = L.slice(order, (subset[0],), (subset[1],))
    return _take(v, order, 1), _take(w, order, 0)


def eigh_qdwh(x, *, lower: bool, sort_eigenvalues: bool, subset_by_index):
    """The eigh primitive's ``(v, w)`` by jax's QDWH eigh: the Hermitian matrix that one
    triangle of each of ``x``'s matrices describes, decomposed by XLA's Jacobi solver up to
    ``TERMINATION_SIZE`` (sorted and sliced for a subset) and by spectral divide and conquer
    beyond it (one matrix of a batch at a time, as jax maps)."""
    *batch, n, _ = x.shape
    subset = None
    if subset_by_index is not None:
        subset = check_subset(subset_by_index, n)
        subset = None if subset == (0, n) else subset
    h = _hermitian_from_triangle(x, lower)
    if n <= TERMINATION_SIZE:
        v, w = L.eigh(h, lower=True, symmetrize_input=False,
                      sort_eigenvalues=sort_eigenvalues or subset is not None,
                      algorithm="JACOBI")
        if subset is None:
            return v, w
        nb = len(batch)
        v = L.slice(v, (0,) * (nb + 1) + (subset[0],), (*batch, n, subset[1]))
        w = L.slice(w, (0,) * nb + (subset[0],), (*batch, subset[1]))
        return v, w

    def one(a):
        return _eigh_one(a, sort_eigenvalues=sort_eigenvalues, subset=subset)
    return batch_map(one, h)
