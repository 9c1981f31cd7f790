"""``python -m verify FILE.mlir`` (or ``mhlo-run``): check, compile and run an MLIR file.

Why a command line: a module printed by ``mhlo_ir`` (or written by hand, or cut down from a bug
report) is often easier to try as a file than from Python. This goes through exactly the path the
library uses (``verify.check`` → ``verify.compile`` → ``Executable``), so what it accepts and
rejects is what programs see. Failures print the readable message (jaxlib's error named after
the file, the line with a caret under the column) and exit with status 1, without a Python
traceback, because the traceback would only show this file; a missing jaxlib or a platform
with no device here is one line saying so.

Inputs come from ``.npy`` files, one per parameter in order, or are made up (``--random``) from
the program's parameter shapes and dtypes, reproducibly for a given ``--seed``.
"""

from __future__ import annotations

import argparse
import os
import sys

import ml_dtypes
import numpy as np

from . import api
from .errors import ArgumentError, JaxlibMissing, PlatformUnavailable, VerificationError

__all__ = ["main", "random_inputs"]


_EPILOG = """\
what it does (one of):
  FILE                  verify, compile and run it; print each result (needs inputs below
                        when @main takes arguments)
  FILE --check-only     parse and verify only (jaxlib's verifier and XLA's shape checks)
  FILE --compile-only   verify and compile; print @main's parameter types
  FILE --platform tpu --topology v5e:2x4
                        compile ahead of time for a TPU topology through libtpu (no TPU
                        needed, nothing runs: compile-only)

what the compiler made (any platform), with --show hlo,cost,memory,shapes:
  hlo     the optimized HLO (fusions, layouts, the SPMD partitioner's collectives)
  cost    XLA's cost analysis (flops, bytes accessed, ...)
  memory  argument, output and temporary buffer sizes per device
  shapes  @main's per-device parameter shapes (after SPMD partitioning)

examples:
  {prog} model.mlir --random --seed 1
  {prog} model.mlir --input x.npy y.npy
  {prog} model.mlir --check-only
  cat model.mlir | {prog} - --compile-only --platform cuda
  {prog} model.mlir --platform tpu --topology v5e:2x4 --num-partitions 8 --show hlo,cost,memory

exit status: 0 success, 1 the module, the inputs or the machine failed (one message on
stderr), 2 bad command line. Needs jaxlib: pip install 'mhlo-ir[verify]' (and, for
--platform tpu, libtpu: pip install 'mhlo-ir[tpu]').
"""

SHOW = ("hlo", "cost", "memory", "shapes")


def prog_name() -> str:
    """``mhlo-run`` when started as that script, else ``python -m verify`` (argparse's own
    guess would be ``__main__.py``)."""
    name = os.path.basename(sys.argv[0] if sys.argv else "")
    return "mhlo-run" if name.startswith("mhlo-run") else "python -m verify"


def _parser() -> argparse.ArgumentParser:
    prog = prog_name()
    p = argparse.ArgumentParser(
        prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Verify, compile and run an MHLO/StableHLO .mlir file through jaxlib.",
        epilog=_EPILOG.format(prog=prog))
    p.add_argument("file", help="the .mlir file (text); '-' reads standard input")
    p.add_argument("--platform", choices=("cpu", "cuda", "tpu"), default="cpu",
                   help="where to compile and run (default cpu; tpu: compile-only, with "
                        "--topology)")
    p.add_argument("--topology", metavar="GEN:CHIPS",
                   help="the TPU topology to compile for (v5e:2x2, v5e:2x4, v6e:2x2, ...)")
    p.add_argument("--num-replicas", type=int, default=1, metavar="N",
                   help="compile for N replicas (default 1)")
    p.add_argument("--num-partitions", type=int, default=1, metavar="N",
                   help="compile for N SPMD partitions (default 1)")
    p.add_argument("--show", type=_show_list, default=(), metavar="WHAT",
                   help=f"after compiling, print any of {','.join(SHOW)} (comma-separated)")
    p.add_argument("--input", dest="inputs", action="extend", nargs="+", default=[],
                   metavar="NAME.npy", help="one .npy file per parameter, in order")
    p.add_argument("--random", action="store_true",
                   help="run on random inputs shaped like the program's parameters")
    p.add_argument("--seed", type=int, default=0, help="seed for --random (default 0)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check-only", action="store_true", help="parse and verify only")
    mode.add_argument("--compile-only", action="store_true", help="verify and compile only")
    return p


def _show_list(text: str) -> tuple:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in items if x not in SHOW]
    if bad or not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {', '.join(SHOW)}"
                                         f", got {text!r}")
    return items


def show(compiled, what) -> None:
    """Print the parts of ``compiled`` (a ``verify.Compiled``) that ``what`` names."""
    for item in what:
        if item == "hlo":
            print("-- optimized HLO --")
            print(compiled.optimized_hlo().rstrip())
        elif item == "cost":
            print("-- cost analysis --")
            for k, v in sorted(compiled.cost_analysis().items()):
                print(f"{k}: {v:g}")
        elif item == "memory":
            print("-- memory (bytes per device) --")
            for k, v in compiled.memory_stats().items():
                print(f"{k}: {v}")
        elif item == "shapes":
            print("-- per-device parameter shapes --")
            for i, shape in enumerate(compiled.shard_shapes()):
                print(f"parameter {i}: [{', '.join(map(str, shape))}]")


def random_inputs(parameters, seed: int = 0) -> list:
    """One random array per ``(shape, dtype)``: small values every element type can hold."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in parameters:
        dtype = np.dtype(dtype)
        if dtype == np.bool_:
            a = rng.random(shape) < 0.5
        elif dtype.kind == "c":
            a = rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)
        elif _is_integer(dtype):
            info = ml_dtypes.iinfo(dtype)
            a = rng.integers(max(int(info.min), -8), min(int(info.max), 8) + 1, shape)
        elif "e8m0" in dtype.name:  # exponent-only: positive powers of two
            a = 2.0 ** rng.integers(-3, 4, shape)
        else:
            a = rng.uniform(-2, 2, shape)
        out.append(np.asarray(a).astype(dtype))
    return out


def _is_integer(dtype) -> bool:
    try:
        ml_dtypes.iinfo(dtype)  # numpy's and ml_dtypes' (int2, int4...) integers
        return True
    except ValueError:
        return False


def _describe(a: np.ndarray) -> str:
    return f"{a.dtype}[{', '.join(map(str, a.shape))}]"


def _run(args) -> int:
    if args.file == "-":
        text, name = sys.stdin.read(), "<stdin>"
    else:
        with open(args.file, encoding="utf-8") as f:
            text, name = f.read(), args.file
    if args.check_only:
        api.check(text, filename=name)
        print(f"{args.file}: verified")
        return 0
    exe = api.compile(text, args.platform, filename=name, topology=args.topology,
                      num_replicas=args.num_replicas, num_partitions=args.num_partitions)
    where = f"TPU topology {args.topology}" if args.topology else args.platform
    n = args.num_replicas * args.num_partitions
    runs = exe.runnable and not args.compile_only
    given = bool(args.inputs) or args.random
    if not runs or args.show or (n > 1 and not given):
        sig = ", ".join("token or tuple" if p is None else
                        f"{np.dtype(p[1])}[{', '.join(map(str, p[0]))}]" for p in exe.parameters)
        print(f"{args.file}: compiled for {where}; parameters ({sig})")
        show(exe, args.show)
        if not runs:
            return 0
        if not given and exe.parameters:
            print("(not run: give --input files or --random to run it)")
            return 0
    if any(p is None for p in exe.parameters):
        raise ArgumentError("@main has a token or tuple parameter, which cannot be passed "
                            "from the command line; use --compile-only, or array parameters")
    if args.inputs and args.random:
        raise ArgumentError("give either --input files or --random, not both")
    if args.inputs:
        # (inputs past the parameters are kept: the count's error says how many)
        params = [*exe.parameters, *[None] * len(args.inputs)]
        arrays = [_as_parameter(np.load(name, allow_pickle=False), p)
                  for name, p in zip(args.inputs, params)]
    elif args.random or not exe.parameters:
        arrays = random_inputs(exe.parameters, args.seed)
    else:
        raise ArgumentError(f"the program takes {len(exe.parameters)} arguments: pass one "
                            "--input NAME.npy per parameter, or --random")
    # (several devices: whole arrays in, split by the program's shardings; results whole)
    for i, out in enumerate(exe(*arrays) if n == 1 else exe.run_global(*arrays)):
        print(f"result {i}: {_describe(out)}")
        print(repr(out))
    return 0


def _as_parameter(array, parameter):
    """An input read from .npy as its parameter's dtype where numpy saved that dtype as raw
    bytes (bfloat16, the float8s, int4... : ``|V2``, ``|V1``) of the same size."""
    if parameter is not None and array.dtype.kind == "V" and \
            array.dtype.itemsize == np.dtype(parameter[1]).itemsize:
        return array.view(parameter[1])
    return array


def main(argv=None) -> int:
    """Entry point; returns the exit status (0 success, 1 failure, 2 bad command line)."""
    p = _parser()
    args = p.parse_args(argv)
    if args.topology is not None and args.platform != "tpu":
        p.error("--topology is for --platform tpu")
    if args.platform == "tpu" and args.topology is None:
        p.error("--platform tpu needs --topology (for example v5e:2x2)")
    if args.check_only:  # (nothing is compiled or run: options about that would be ignored)
        given = [flag for flag, on in (
            ("--show", args.show), ("--input", args.inputs), ("--random", args.random),
            ("--seed", args.seed != 0), ("--num-replicas", args.num_replicas != 1),
            ("--num-partitions", args.num_partitions != 1),
            ("--platform", args.platform != "cpu"), ("--topology", args.topology)) if on]
        if given:
            p.error(f"--check-only compiles and runs nothing: {', '.join(given)} would be "
                    "ignored (drop --check-only, or them)")
    for flag in ("num_replicas", "num_partitions"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be at least 1, got {getattr(args, flag)}")
    try:
        return _run(args)
    except (VerificationError, ArgumentError, JaxlibMissing, PlatformUnavailable,
            RuntimeError) as e:  # (RuntimeError: a program it cannot run, an infeed say)
        print(f"error: {e}", file=sys.stderr)
    except (OSError, ValueError) as e:  # unreadable file, bad .npy, no such platform
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
