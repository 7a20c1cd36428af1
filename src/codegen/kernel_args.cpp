#include "codegen/kernel_args.h"

#include <algorithm>
#include <sstream>

#include "ir/errors.h"

namespace nvfuse {

std::string cuda_type_of(DataType dtype) {
  switch (dtype) {
    case DataType::Double:
      return "double";
    case DataType::Float:
      return "float";
    case DataType::Half:
      return "nvfuse::Half";
    case DataType::BFloat16:
      return "nvfuse::BFloat16";
    case DataType::Int:
    case DataType::Index:
      return "nvfuse::int64";
    case DataType::Int32:
      return "int";
    case DataType::Bool:
      return "bool";
    default:
      NVFUSE_ASSERT(false, "no generated-code type for ", dtype);
  }
  return "";
}

DataType math_dtype_of(DataType dtype) {
  return (dtype == DataType::Half || dtype == DataType::BFloat16) ? DataType::Float : dtype;
}

void KernelArgLayout::add(KernelArg arg) {
  if (arg.field == ArgField::kTensorPointer || arg.field == ArgField::kWorkspace ||
      arg.field == ArgField::kSemaphores || arg.field == ArgField::kGraphRng) {
    arg.element_size = sizeof(void*);
  } else if (arg.field == ArgField::kValue) {
    arg.element_size = static_cast<size_t>(size_in_bytes(arg.dtype));
  } else if (arg.field == ArgField::kDividers) {
    arg.element_size = 8;  // two uint32
  } else {
    arg.element_size = index_32bit ? 4 : 8;
  }
  const size_t align = arg.field == ArgField::kDividers ? 4 : arg.element_size;
  arg.offset = (size + align - 1) / align * align;
  size = arg.offset + arg.element_size * arg.count;
  alignment = std::max(alignment, align);
  args.push_back(std::move(arg));
}

std::string KernelArgLayout::to_cuda() const {
  const std::string index = index_32bit ? "int" : "nvfuse::int64";
  std::ostringstream ss;
  ss << "struct Args {\n";
  for (const KernelArg& arg : args) {
    ss << "  ";
    switch (arg.field) {
      case ArgField::kTensorPointer:
        ss << (arg.read_only ? "const " : "") << cuda_type_of(arg.dtype) << "* " << arg.name << ";";
        break;
      case ArgField::kValue:
        ss << cuda_type_of(arg.dtype) << " " << arg.name << ";";
        break;
      case ArgField::kWorkspace:
        ss << "char* " << arg.name << ";";
        break;
      case ArgField::kSemaphores:
        ss << "unsigned* " << arg.name << ";";
        break;
      case ArgField::kGraphRng:
        ss << "const long long* " << arg.name << ";";
        break;
      case ArgField::kNumel:
      case ArgField::kWidth:
      case ArgField::kColStride:
      case ArgField::kPartialRows:
      case ArgField::kLaneShift:
        ss << index << " " << arg.name << ";";
        break;
      case ArgField::kExtents:
      case ArgField::kStrides:
        ss << index << " " << arg.name << "[" << arg.count << "];";
        break;
      case ArgField::kDividers:
        ss << "nvfuse::FastDivider " << arg.name << "[" << arg.count << "];";
        break;
    }
    ss << "  // offset " << arg.offset << "\n";
  }
  ss << "};\n";
  return ss.str();
}

}  // namespace nvfuse
