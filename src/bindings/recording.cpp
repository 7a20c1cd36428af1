#include "bindings/bindings.h"
#include "frontend/recording_state.h"
#include "codegen/philox.cuh"
#include "frontend/tensor_descriptor.h"

namespace py = pybind11;

namespace nvfuse {

namespace {

OpType op_named(const std::string& name) {
  auto op = op_type_named(name);
  NVFUSE_CHECK(op.has_value(), "there is no op named '", name, "'");
  return *op;
}

OpType reduction_op_named(const std::string& name) {
  if (name == "sum") {
    return OpType::add;
  }
  if (name == "prod") {
    return OpType::mul;
  }
  if (name == "max") {
    return OpType::maximum;
  }
  NVFUSE_CHECK(name == "min", "there is no reduction named '", name, "'");
  return OpType::minimum;
}

// A Python argument of an fd.ops wrapper as record data: a state, None, a
// bool, an int, a DataType, or a list of states or of ints.
ArgValue arg_value_of(const py::handle& value, const std::string& keyword) {
  if (value.is_none()) {
    return std::monostate{};
  }
  if (py::isinstance<StateRef>(value)) {
    return value.cast<StateRef>();
  }
  if (py::isinstance<py::bool_>(value)) {
    return value.cast<bool>();
  }
  if (py::isinstance<ParallelType>(value)) {
    return value.cast<ParallelType>();
  }
  if (py::isinstance<DeviceMesh>(value)) {
    return value.cast<DeviceMesh>();
  }
  if (py::isinstance<py::int_>(value)) {
    return value.cast<int64_t>();
  }
  if (py::isinstance<DataType>(value)) {
    return value.cast<DataType>();
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    py::sequence items = value.cast<py::sequence>();
    if (items.size() > 0 && py::isinstance<StateRef>(items[0])) {
      return items.cast<std::vector<StateRef>>();
    }
    return items.cast<std::vector<int64_t>>();
  }
  NVFUSE_ASSERT(false, "argument `", keyword, "` has an unsupported Python type ",
      std::string(py::str(py::type::of(value))));
  return std::monostate{};
}

}  // namespace

void init_recording(py::module_& m) {
  py::enum_<StateKind>(m, "StateKind")
      .value("Tensor", StateKind::kTensor)
      .value("Scalar", StateKind::kScalar)
      .value("Vector", StateKind::kVector);

  py::class_<StateRef>(m, "StateRef")
      .def_readonly("kind", &StateRef::kind)
      .def_readonly("index", &StateRef::index)
      .def_property_readonly("name", &StateRef::name)
      .def("__repr__", &StateRef::name);

  py::class_<RecordingState>(m, "RecordingState")
      .def(py::init<>())
      .def("define_tensor", &RecordingState::define_tensor, py::arg("shape"), py::arg("contiguity"),
          py::arg("dtype"), py::arg("is_cpu"), py::arg("stride_order"))
      .def("define_scalar", &RecordingState::define_scalar, py::arg("value"), py::arg("dtype"))
      .def("define_vector", &RecordingState::define_vector)
      .def("pointwise",
          [](RecordingState& s, const std::string& op, std::vector<StateRef> operands) {
            return s.pointwise(op_named(op), std::move(operands));
          })
      .def("cast", &RecordingState::cast)
      .def("broadcast_in_dim", &RecordingState::broadcast_in_dim)
      .def("broadcast", &RecordingState::broadcast)
      .def("expand", &RecordingState::expand)
      .def("reduction",
          [](RecordingState& s, const std::string& name, StateRef operand,
              std::vector<int64_t> dims, bool keepdim, DataType dtype) {
            return s.reduction(reduction_op_named(name), operand, std::move(dims), keepdim, dtype);
          })
      .def("var_mean", &RecordingState::var_mean)
      .def("var", &RecordingState::var)
      .def("mean", &RecordingState::mean)
      .def("welford", &RecordingState::welford)
      .def(
          "record_op",
          [](RecordingState& s, const std::string& method,
              const std::vector<std::pair<std::string, py::object>>& args) {
            auto kind = record_kind_of_method(method);
            NVFUSE_ASSERT(kind.has_value(), "no record kind for ", method);
            std::vector<RecordArg> record_args;
            for (const auto& [keyword, value] : args) {
              record_args.push_back({keyword, arg_value_of(value, keyword)});
            }
            return s.record_op(*kind, std::move(record_args));
          },
          "Records `method` (e.g. 'fd.ops.reshape') with (keyword, value) "
          "arguments; returns the states it defines")
      .def("add_output", &RecordingState::add_output)
      .def("rank_of", &RecordingState::rank_of)
      .def("vector_length", &RecordingState::vector_length)
      .def("dtype_of", &RecordingState::dtype_of)
      .def("python_definition",
          [](const RecordingState& s, const std::string& name) {
            return python_definition(s.records(), name);
          })
      .def("fusion_ir", [](const RecordingState& s) { return s.fusion().to_string(); });

  m.def(
      "repro_script_of_state",
      [](const RecordingState& s) { return repro_script(s.records(), "nvfuse_fusion"); },
      "The repro script of a definition still being recorded");
  m.def(
      "philox4x32_10",
      [](const std::array<uint32_t, 4>& counter, const std::array<uint32_t, 2>& key) {
        const nvfuse_philox::Words w =
            nvfuse_philox::philox(counter[0], counter[1], counter[2], counter[3], key[0], key[1]);
        return std::vector<uint32_t>(w.w, w.w + 4);
      },
      py::arg("counter"), py::arg("key"),
      "The Philox4x32-10 block that nvfuse's random ops draw from (for "
      "known-answer tests)");
  m.def(
      "describe_tensor",
      [](const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
        TensorDescriptor d = describe_tensor(sizes, strides);
        return py::make_tuple(d.shape, d.contiguity, d.stride_order);
      },
      "(shape, contiguity, stride_order) that define_tensor records for a "
      "tensor with these sizes and strides");
}

}  // namespace nvfuse
