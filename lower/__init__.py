"""lower: jaxpr programs to mhlo_ir modules (the lowering machinery arrives in its own issue)."""
