"""The main job: build a small MLP layer as MHLO, print it, run it on CPU through jaxlib, and
check the result against numpy.

    python examples/mlp.py
"""

from __future__ import annotations

import numpy as np

import mhlo_ir as hlo
import verify


def build_mlp(batch: int = 4, d_in: int = 8, d_hidden: int = 16, d_out: int = 3) -> hlo.Module:
    """relu(x @ w1 + b1) @ w2 + b2, with a softmax over the last axis."""
    f32 = hlo.f32
    m = hlo.Module("mlp")
    fn = m.add_function("main", [hlo.tensor((batch, d_in), f32), hlo.tensor((d_in, d_hidden), f32),
                                 hlo.tensor((d_hidden,), f32), hlo.tensor((d_hidden, d_out), f32),
                                 hlo.tensor((d_out,), f32)], visibility="public")
    b = fn.builder()
    x, w1, b1, w2, b2 = fn.arguments

    def dense(h, w, bias, width, where):
        with b.at_location("examples/mlp.py", where, 1):
            y = b.dot_general(h, w, contracting_dimensions=((1,), (0,)))
            return b.add(y, b.broadcast_in_dim(bias, (batch, width), [1]))

    h = dense(x, w1, b1, d_hidden, 32)
    h = b.maximum(h, b.constant(np.zeros((batch, d_hidden), np.float32)))
    logits = dense(h, w2, b2, d_out, 34)

    # softmax: exp(z - max(z)) / sum(exp(z - max(z)))
    ninf = b.constant(np.float32(-np.inf))
    zero = b.constant(np.float32(0))
    zmax = b.reduce(logits, ninf, [1], lambda r, a, e: r.maximum(a, e))
    z = b.subtract(logits, b.broadcast_in_dim(zmax, (batch, d_out), [0]))
    e = b.exponential(z)
    total = b.reduce(e, zero, [1], lambda r, a, v: r.add(a, v))
    probs = b.divide(e, b.broadcast_in_dim(total, (batch, d_out), [0]))
    b.return_(probs)
    return m


def reference(x, w1, b1, w2, b2):
    h = np.maximum(x @ w1 + b1, 0)
    z = h @ w2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main() -> int:
    rng = np.random.default_rng(0)
    module = build_mlp()
    print(module.to_text())
    args = [rng.standard_normal(p.type.shape).astype(np.float32)
            for p in module.lookup("main").arguments]
    (probs,) = verify.run(module, *args)
    expected = reference(*args)
    err = float(np.max(np.abs(probs - expected)))
    print("result (softmax probabilities):")
    print(probs)
    ok = err < 1e-5
    print(f"max |jaxlib - numpy| = {err:.2e} -> {'OK' if ok else 'MISMATCH'} (tolerance 1e-5)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
