"""What XLA made of a program, on any platform: ``Compiled``.

Every compile (``verify.compile``) answers the questions people ask of a compiler before they
run anything: the optimized HLO (fusions, layouts, the collectives the SPMD partitioner
inserted), XLA's cost analysis (flops, bytes accessed), memory statistics (argument, output,
temporary buffer sizes), the per-device parameter shapes, and the serialized executable. A
TPU compile without a TPU stops here (``Compiled``); CPU and GPU compiles are ``Executable``s,
which also run.
"""

from __future__ import annotations

import re

from . import _jaxlib
from .errors import ArgumentError

__all__ = ["Compiled", "MEMORY_FIELDS"]

# CompiledMemoryStats fields ``memory_stats`` reports (device memory; host_* where the
# platform keeps buffers on the host as well).
MEMORY_FIELDS = ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
                 "alias_size_in_bytes", "generated_code_size_in_bytes",
                 "host_argument_size_in_bytes", "host_output_size_in_bytes",
                 "host_temp_size_in_bytes", "host_alias_size_in_bytes",
                 "host_generated_code_size_in_bytes")


class Compiled:
    """A program XLA compiled for ``platform`` (and ``topology``, for a TPU compile).

    ``parameters`` are @main's ``(shape, dtype)`` per parameter (None for tokens and tuples),
    ``text`` the MLIR that was compiled, ``devices`` the devices it was compiled for."""

    def __init__(self, compiled, platform, devices, params, text, num_replicas=1,
                 num_partitions=1, computation=None, topology=None) -> None:
        self._compiled = compiled
        self._computation = computation
        self.platform = platform
        self.topology = topology
        self.devices = list(devices)
        self.parameters = params
        self.text = text
        self.num_replicas = num_replicas
        self.num_partitions = num_partitions

    @property
    def runnable(self) -> bool:
        """Whether this machine can run it (False for a compile-only TPU program)."""
        return False

    def __call__(self, *arrays) -> list:
        raise ArgumentError(f"this program was compiled for {self._target()} without one "
                            "(compile-only): it cannot run here; its optimized_hlo(), "
                            "cost_analysis(), memory_stats(), shard_shapes() and serialize() "
                            "are what there is")

    def _target(self) -> str:
        return f"TPU topology {self.topology}" if self.topology else self.platform

    def input_hlo(self, canonical: bool = False) -> str:
        """The HLO module XLA compiled, as text, before XLA's optimizations. ``canonical``
        prints it without instruction names or metadata but with every constant in full
        (``_jaxlib.canonical_hlo``): two programs whose canonical texts are equal compile,
        with the same options, to the same executable."""
        if self._computation is None:
            _, X = _jaxlib.xla()
            self._computation = _jaxlib.on_big_stack(X.mlir.mlir_module_to_xla_computation,
                                                     self.text)
        if canonical:
            return _jaxlib.canonical_hlo(self._computation)
        return self._computation.get_hlo_module().to_string()

    def optimized_hlo(self) -> str:
        """The HLO XLA compiled after its optimizations, as text: fusions, layouts (TPU tiles
        such as ``{1,0:T(8,128)}``), and, for SPMD programs, per-device shapes and the
        collectives the partitioner inserted."""
        return "\n".join(m.to_string() for m in self._compiled.hlo_modules())

    def _head(self) -> str:
        """The compiled HLO module's first line (its aliases, layouts and options)."""
        return self._compiled.hlo_modules()[0].to_string().split("\n", 1)[0]

    def aliased_parameters(self) -> tuple:
        """The parameters whose buffers the compiled program takes for results (its
        ``input_output_alias``: the aliases the module asked for, and the ``jax.buffer_donor``
        arguments XLA chose to reuse), in order: what jax deletes of donated arrays."""
        m = re.search(r"input_output_alias=\{(.*?)\}, [a-z_]+=", self._head())
        if m is None:
            return ()
        return tuple(sorted({int(p) for p in re.findall(r":\s*\((\d+),", m.group(1))}))

    def cost_analysis(self) -> dict:
        """XLA's cost model for the program: ``flops``, ``bytes accessed`` (and its split by
        operand, ``bytes accessed0{}``...), ``transcendentals`` and, where the platform
        estimates it, ``optimal_seconds``; floats, keyed as XLA names them."""
        cost = self._compiled.cost_analysis()
        if isinstance(cost, (list, tuple)):  # older jaxlibs: one dict per program
            cost = cost[0] if cost else {}
        return {k: float(v) for k, v in dict(cost).items()}

    def memory_stats(self) -> dict:
        """XLA's buffer sizes for one device, in bytes (``MEMORY_FIELDS``), and
        ``peak_memory_in_bytes`` where the platform reports it."""
        stats = self._compiled.get_compiled_memory_stats()
        out = {k: int(getattr(stats, k)) for k in MEMORY_FIELDS if hasattr(stats, k)}
        peak = getattr(stats, "peak_memory_in_bytes", None)
        if peak is not None:
            out["peak_memory_in_bytes"] = int(peak)
        return out

    def serialize(self) -> bytes:
        """The compiled executable as bytes (XLA's own serialization: loadable again by a
        client of the same platform and jaxlib with ``deserialize_executable``)."""
        return bytes(self._compiled.serialize())

    def shard_shapes(self) -> list:
        """Per-device parameter shapes (after XLA's SPMD partitioning; the full shapes when the
        program is only replicated)."""
        if any(p is None for p in self.parameters):
            raise ArgumentError("per-device shapes are of array parameters only; @main has a "
                                "token or tuple parameter")
        if self.num_partitions == 1:
            return [shape for shape, _ in self.parameters]
        head = self._head()
        m = re.search(r"entry_computation_layout=\{\((.*?)\)->", head)
        # (a bounded dynamic dimension reads "<=4": its bound)
        shapes = [tuple(int(x.lstrip("<=")) for x in dims.split(",") if x)
                  for dims in re.findall(r"\w+\[((?:<=)?\d*(?:,(?:<=)?\d+)*)\]",
                                         m.group(1))] if m else []
        if len(shapes) != len(self.parameters):
            raise RuntimeError(f"could not read the per-device parameter shapes from {head!r}")
        return shapes
