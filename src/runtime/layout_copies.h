// Several tensors copied into fresh tensors of other layouts by one kernel
// launch. A channels-last network's step converts each 3x3 and 7x7
// convolution weight to channels-last: one ATen copy per weight, inside
// each convolution call (cuDNN's), is a host call and a launch apiece on a
// step that is bound by its host; one grouped launch replaces them all.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace nvfuse {

// Fresh tensors with the sizes, dtypes and devices of `sources`, each laid
// out with the strides of `strides` (dense: a permutation of a contiguous
// layout) and holding its source's values. CUDA sources of one device are
// copied by one kernel launch per element size on torch's current stream;
// others (CPU tensors, more than 2^31 elements) by ATen's copy. Throws an
// InputError naming the tensor for strides of the wrong length or not
// dense, and for CUDA sources on more than one device.
std::vector<at::Tensor> copy_into_layouts(
    const std::vector<at::Tensor>& sources, const std::vector<std::vector<int64_t>>& strides);

// copy_into_layouts for copies larger than their sources along one axis
// (a GEMM operand padded to aligned rows): each copy has the sizes of
// `sizes` and the (dense) strides of `strides`; its elements past its
// source's extent along that axis are zeros. The same launches; throws an
// InputError naming the tensor for sizes smaller than its own or larger
// along more than one axis.
std::vector<at::Tensor> copy_into_padded(const std::vector<at::Tensor>& sources,
    const std::vector<std::vector<int64_t>>& sizes,
    const std::vector<std::vector<int64_t>>& strides);

// The CUDA C++ source of the grouped copy kernel for elements of
// `element_size` bytes (1, 2, 4 or 8), and its kernel's name.
std::string layout_copies_source(int element_size);
std::string layout_copies_kernel_name(int element_size);

}  // namespace nvfuse
