"""jax.jit's options beyond shardings, static and donated arguments, as lower.jax reads them:
``keep_unused`` (unused arguments pruned from the program, as jax.jit prunes them),
``backend`` / ``device`` (deprecated in jax: the platform to lower and run for),
``compiler_options`` (XLA's options by name, handed to ``verify.compile``) and ``inline``
(what jax.jit does with it when a jitted function is called inside another's trace)."""

from __future__ import annotations

import warnings

# jax.jit's words (jax 0.10.2, pjit._parse_jit_arguments).
_DEPRECATED = ("backend and device argument on jit is deprecated. You can use"
               " `jax.device_put(..., jax.local_devices(backend=\"cpu\")[0])` on the"
               " inputs to the jitted function to get the same behavior.")


def placement(platform, device, backend, in_shardings, out_shardings) -> str:
    """The platform a ``jit`` lowers and runs for: ``platform`` (ours), or jax.jit's
    deprecated ``backend`` (a platform name) or ``device`` (a jax Device: its platform),
    checked and warned about in jax.jit's words (DeprecationWarning at the call of ``jit``).
    Our programs run on the platform's first device and their results come back as numpy
    arrays, so ``device`` says no more than its platform."""
    if backend is None and device is None:
        return "cpu" if platform is None else platform
    # (placement <- Jitted.__init__ <- jit or its decorator <- the caller)
    warnings.warn(_DEPRECATED, category=DeprecationWarning, stacklevel=4)
    if device is not None and backend is not None:
        raise ValueError("can't specify both a device and a backend for jit, "
                         f"got {device=} and {backend=}")
    if in_shardings is not None:
        raise ValueError("If backend or device is specified on jit, then "
                         "in_shardings should not be specified.")
    if out_shardings is not None:
        raise ValueError("If backend or device is specified on jit, then "
                         "out_shardings should not be specified.")
    if device is not None:
        chosen = getattr(device, "platform", None)
        if not isinstance(chosen, str):
            raise TypeError(f"device= takes a jax Device (jax.devices()[0]), got "
                            f"{type(device).__name__} {device!r}")
    else:
        if not isinstance(backend, str):
            raise TypeError(f"backend= takes a platform name ('cpu', 'gpu', 'tpu'), got "
                            f"{type(backend).__name__} {backend!r}")
        chosen = backend
    if platform is not None and _canonical(platform) != _canonical(chosen):
        raise ValueError(f"platform={platform!r} and "
                         f"{'device' if device is not None else 'backend'}={chosen!r} name "
                         "different platforms: give one")
    return chosen


def _canonical(platform: str) -> str:
    return {"gpu": "cuda"}.get(platform.lower(), platform.lower())


def check_backend(platform: str) -> None:
    """jax.jit's refusal of a backend it does not know (a RuntimeError when the function is
    lowered or called, not when it is jitted)."""
    if _canonical(platform) not in ("cpu", "cuda", "rocm", "tpu"):
        raise RuntimeError(f"Unknown backend {platform}. lower.jax knows 'cpu', 'cuda' (or "
                           "'gpu'), 'rocm' and 'tpu'")


def compiler_options_dict(options) -> dict | None:
    """jax.jit's ``compiler_options``: None or a dict of XLA option names to values."""
    if options is None:
        return None
    if not hasattr(options, "items"):
        raise TypeError(f"compiler_options is a dict of XLA option names to values, got "
                        f"{type(options).__name__} {options!r}")
    return dict(options)


def prune_unused(closed):
    """jax.jit's pruning (``keep_unused=False``, pxla._dce_jaxpr): the jaxpr without dead
    equations and without the arguments and constants nothing left uses, and the flat
    indices of the arguments kept (None: all, where a shape is not constant, as in jax)."""
    from jax._src import core
    from jax._src.interpreters import partial_eval as pe
    if any(hasattr(a, "shape") and not core.is_constant_shape(a.shape)
           for a in closed.in_avals):
        return closed, None
    jaxpr, used_consts, used_inputs = pe.dce_jaxpr_consts(
        closed.jaxpr, [True] * len(closed.jaxpr.outvars))
    consts = [c for c, used in zip(closed.consts, used_consts) if used]
    return core.ClosedJaxpr(jaxpr, consts), tuple(i for i, u in enumerate(used_inputs) if u)


def nested_options(jitted) -> dict:
    """What jax.jit takes of a Jitted called inside another's trace (where jax.jit traces
    it): ``inline`` (its equations then join the outer program's, no call), ``keep_unused``,
    the donations (which jax.jit honours where jax runs it: under vmap it deletes the donated
    array) and ``compiler_options`` (which jax refuses on a nested jit, in its words)."""
    options = dict(keep_unused=jitted.keep_unused, inline=jitted.inline,
                   donate_argnums=jitted.donate_argnums,
                   donate_argnames=jitted.donate_argnames)
    if jitted.compiler_options:
        options["compiler_options"] = jitted.compiler_options
    return options
