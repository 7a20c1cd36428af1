"""The backend's FX passes over an ATen graph from AOTAutograd, one
concern a file; `pipeline.compile_graph` runs them in order:

1. `in_place_updates.mark_in_place_updates`: input updates get a reader,
2. `partition.partition_regions`: the fusible regions become submodules
   (unsafe input updates left out by `in_place_updates`),
3. `regions.install_regions`: each submodule is replaced by the
   FusedRegion that runs it as nvfuse fusions,
4. `gemm_alignment.pad_unaligned_gemms`: GEMMs cuBLAS would read
   unaligned get zero-padded operands.

Decompositions run before them, inside AOTAutograd
(`decompositions.py`)."""
