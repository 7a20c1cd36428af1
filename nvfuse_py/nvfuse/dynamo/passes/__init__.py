"""The backend's FX passes over an ATen graph from AOTAutograd, one
concern a file; `pipeline.compile_graph` runs them in order:

0. `empty_operands.drop_empty_operands`: cats drop their operands without
   elements and scatters of an empty source become copies of their base
   (Phi-3's rotary embedding), so that no region reads an empty tensor
   (such a region runs on the ATen reference evaluator),
0a. `patch_convolutions.rewrite_patch_convolutions`: convolutions whose
   kernel tiles the image (vision transformers' patch embeddings), and
   their backwards, become GEMMs over the image's patches,
0b. `channels_last.run_convolutions_channels_last` (the backend's
   `channels_last` option): convolutions read channels-last operands, so
   that cuDNN converts no layout and the regions between them keep it,
0c. `pixel_convolutions.rewrite_pixel_convolutions`: 1x1 convolutions
   of stride 1 over channels-last images, and their backwards, become
   GEMMs over views of the image (cuBLAS's calls cost the host less than
   cuDNN's),
0d. `weight_layouts.group_weight_layouts`: the NCHW weights of
   convolutions over channels-last images are copied into channels-last
   together, by one kernel launch, instead of by cuDNN one call each,
0e. `convolution_biases.move_convolution_biases_into_regions`: the
   bias of a convolution a region reads is added by that region, and a
   convolution backward's bias gradient is a generated sum of the
   output's gradient (not ATen's add_ and reduction),
1. `split_reductions.split_reductions`: reductions over axes not adjacent
   in memory (batch norm's N, H, W around C) become reductions over runs
   of adjacent axes, which generated kernels take,
1b. `reciprocal_square_roots.fold_reciprocal_square_roots`:
   reciprocal(sqrt(x)) becomes rsqrt(x) (batch norm's inference inverse
   standard deviation: one instruction instead of two correctly rounded
   ops an element),
1c. `sigmoid_forms.fold_sigmoids`: reciprocal(exp(-x) + 1) (silu's
   decomposed backward) becomes sigmoid(x),
1d. `max_pool_slices.rewrite_max_pools`: 2-D max pooling whose indices
   nothing reads becomes a maximum of strided slices of the input padded
   with -inf, fused with the ops before it (after the channels-last pass,
   on its layout); a relu only it reads is applied after it,
1e. `relu_before_rounding.move_relus_before_roundings` (CUDA graphs): a
   relu of a narrowing float cast only it reads is applied before the
   cast,
2. `views_before_casts.move_views_before_casts`: view(cast(x)) becomes
   cast(view(x)), so that the view does not cut the cast from its readers,
3. `gather_through_pointwise.push_gathers_through_pointwise`: a gather
   of pointwise ops (cross-entropy's pick of the label's log-probability)
   reads their inputs at the gathered elements only,
4. `one_hot_scatters.rewrite_one_hot_scatters`: a scatter of one number
   a row into a filled tensor (cross-entropy's backward) becomes
   where(arange == index, number, fill), pointwise work on the index,
4b. `one_hot_sums.rewrite_one_hot_sums`: the sum along its axis of such
   a one-hot times a factor constant along it is the number times the
   factor (cross-entropy's backward becomes pointwise),
5. `views_after_pointwise.move_views_after_pointwise`: op(view(x), y)
   becomes view(op(x, view(y))), so that the reshape does not cut the op
   from the kernel that computes x,
5b. `donated_buffers.write_into_donated_buffers` (backward graphs): an
   elementwise op that is a donated saved activation's only reader writes
   its result into it (undone by the partitioner where the write would not
   be in place),
5c. `dead_gemm_results.write_into_dead_gemm_results`: where only
   elementwise ops read a GEMM's or convolution's result, the first of
   their values with its layout is written into its memory (undone
   likewise),
6. `in_place_updates.mark_in_place_updates`: input updates get a reader,
7. `partition.partition_regions`: the fusible regions become submodules
   (unsafe input updates left out by `in_place_updates`),
8. `regions.install_regions`: each submodule is replaced by the
   FusedRegion that runs it as nvfuse fusions,
9. `gemm_alignment.pad_unaligned_gemms`: GEMMs cuBLAS would read
   unaligned get zero-padded operands,
9b. `view_chains.fold_view_chains`, after the graph's report: a chain of
   views of a tensor laid out as its meta value says (a graph input, a
   region's output, a GEMM's result) becomes one as_strided call,
10. `host_calls.respell_host_calls`: the views
   and GEMMs left between regions are called as Tensor methods and torch
   functions, cheaper calls of the same ATen ops.

Decompositions run before them, inside AOTAutograd
(`decompositions.py`)."""
