"""Hypothesis strategies for users who test compilers with generated programs.

    from mhlo_ir import strategies as hst

    @given(hst.programs())
    def test_my_backend(program):
        module, inputs = program
        ...

- ``programs()``: whole well-typed programs over the op table (every op that runs on
  XLA:CPU, all 28 element types), and their inputs; ``op_calls(name)``: one op with drawn
  attributes and regions.
- ``element_types``, ``shapes``, ``tensor_types``, ``arrays``: the leaves;
  ``quantized_types`` the quantized element types (``!quant.uniform``). Arrays are drawn
  as raw bit patterns, so every value a type can hold appears: NaN payloads, -0.0,
  infinities, subnormals, integer extremes.
- ``types``, ``attributes``, ``locations`` and friends: every kind the printer writes and
  the parser reads.

Needs ``hypothesis`` (the ``test`` extra); ``import mhlo_ir`` never imports this package.
Campaigns that need thousands of programs a second use ``generate_seeded`` (the same
generator with ``random.Random`` decisions) through ``python -m verify.fuzz``.
"""

from __future__ import annotations

from .attribute_values import (attributes, dense_array_attrs, dense_elements_attrs,
                               float_attrs, integer_attrs, locations, mhlo_attributes, types)
from .choices import Choices, HypothesisChoices, RandomChoices
from .programs import (OWN_TYPES, RULE_OPS, Program, default_options, generate, generate_seeded,
                       op_calls, programs)
from .scope import Options
from .table import EXCLUDED, RULES
from .values import (arrays, element_types, float_values, quantized_types, shapes,
                     tensor_types)

__all__ = ["element_types", "shapes", "tensor_types", "arrays", "float_values",
           "quantized_types", "programs",
           "op_calls", "types", "integer_attrs", "float_attrs", "dense_array_attrs",
           "dense_elements_attrs", "mhlo_attributes", "attributes", "locations", "Program",
           "generate", "generate_seeded", "default_options", "OWN_TYPES", "Options", "RULES",
           "EXCLUDED", "RULE_OPS", "Choices", "HypothesisChoices", "RandomChoices"]
