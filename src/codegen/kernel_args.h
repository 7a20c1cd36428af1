// The kernel's one parameter, a struct passed by value. Its layout is
// described once here: the code generator prints it as `struct Args` and the
// runtime packs the same bytes, so the two cannot disagree.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ir/data_type.h"

namespace nvfuse {

enum class ArgField {
  kTensorPointer,  // data pointer of kernel tensor `index`
  kValue,          // value input `index` (a scalar or a CPU scalar tensor)
  kNumel,          // elements of the iteration space (reductions: rows)
  kExtents,        // `count` iteration extents, outermost first
  kStrides,        // `count` strides of kernel tensor `index`, in elements
  kWidth,          // reductions: the reduced width
  kColStride,      // reductions: kernel tensor `index`'s reduced-axis stride
  kWorkspace,      // reductions: the split reduction's partial results
  kSemaphores,     // reductions: the split reduction's arrival counters
  kPartialRows,    // inner-outer reductions: partial rows in the workspace
  kLaneShift,      // width-generic reductions: log2 of the lanes a row takes
  kGraphRng,       // random ops: torch's graph-safe seed (index 0) / offset (1) on the device
  kDividers,       // `count` FastDividers (magic, shift) for 32-bit indexing
};

struct KernelArg {
  ArgField field;
  int index = 0;
  int count = 1;
  DataType dtype = DataType::Null;  // element type (pointers, values)
  std::string name;                 // the struct member
  bool read_only = false;           // a pointer the kernel only reads
  size_t offset = 0;
  size_t element_size = 0;
};

struct KernelArgLayout {
  std::vector<KernelArg> args;
  size_t size = 0;
  size_t alignment = 1;
  bool index_32bit = true;

  // Appends a member at its natural alignment.
  void add(KernelArg arg);
  // `struct Args { ... };` in CUDA C++.
  std::string to_cuda() const;
};

// A generated kernel: what a code generator returns.
struct KernelSource {
  std::string name;  // the extern "C" kernel
  std::string code;  // complete: device runtime included
  KernelArgLayout layout;
};

// The C type of a value of `dtype` in generated code.
std::string cuda_type_of(DataType dtype);
// The type it is computed in (float for the half types).
DataType math_dtype_of(DataType dtype);

}  // namespace nvfuse
