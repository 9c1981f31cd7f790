"""Campaigns: generated programs run by XLA and by StableHLO's reference interpreter, compared.

    python -m verify.fuzz --minutes 10 --seed 1 --jobs 2 --json --out findings/

Each program comes from ``mhlo_ir.strategies.generate_seeded`` (the whole op table, every
element type), so a seed reproduces it anywhere. Workers are separate processes: a crash or a
hang of either executor is recorded against the program and the phase it happened in, and the
campaign goes on. Findings (disagreements, crashes, XLA rejecting a generated program) are
reduced to the shortest prefix of the program that still shows them and saved as ``.mlir``
with their inputs (``.npz``) and the record (``.json``). ``verify.differential`` says how
results are compared and which known semantic differences are explained rather than counted.
"""

from .campaign import Campaign, outcome, seed_of, totals

__all__ = ["Campaign", "outcome", "seed_of", "totals"]
