#include "bindings/bindings.h"
#include "ir/data_type.h"
#include "ir/op_table.h"
#include "ir/parallel_type.h"

namespace py = pybind11;

namespace nvfuse {

void init_enums(py::module_& m) {
  py::enum_<DataType> data_type(m, "DataType");
#define NVFUSE_BIND_DATA_TYPE(name, bytes, category) data_type.value(#name, DataType::name);
  NVFUSE_DATA_TYPES(NVFUSE_BIND_DATA_TYPE)
#undef NVFUSE_BIND_DATA_TYPE
  // Printed as `DataType.Float`, as a definition spells it.
  data_type.def("__repr__", [](DataType t) { return std::string("DataType.") + name_of(t); });
  data_type.def("__str__", [](DataType t) { return std::string("DataType.") + name_of(t); });

  py::enum_<ParallelType> parallel_type(m, "ParallelType");
#define NVFUSE_BIND_PARALLEL_TYPE(name) parallel_type.value(#name, ParallelType::name);
  NVFUSE_PARALLEL_TYPES(NVFUSE_BIND_PARALLEL_TYPE)
#undef NVFUSE_BIND_PARALLEL_TYPE
  // The names the Python API uses for device and stream parallelism.
  parallel_type.value("mesh_x", ParallelType::DIDx)
      .value("mesh_y", ParallelType::DIDy)
      .value("mesh_z", ParallelType::DIDz)
      .value("stream", ParallelType::Stream);

  // The op table, for generating fd.ops.<name> in Python.
  m.def("pointwise_ops", [] {
    py::list ops;
    for (const OpInfo& info : all_pointwise_ops()) {
      if (info.in_python) {
        ops.append(py::make_tuple(info.name, info.arity, info.parameters));
      }
    }
    return ops;
  });
}

}  // namespace nvfuse
