#include "bindings/bindings.h"

namespace py = pybind11;

namespace nvfuse {

std::optional<ScalarValue> scalar_from_python(py::handle obj) {
  // bool before int: Python's bool is an int subclass.
  if (PyBool_Check(obj.ptr())) {
    return ScalarValue(obj.ptr() == Py_True);
  }
  if (PyLong_Check(obj.ptr())) {
    return ScalarValue(static_cast<int64_t>(obj.cast<int64_t>()));
  }
  if (PyFloat_Check(obj.ptr())) {
    return ScalarValue(PyFloat_AsDouble(obj.ptr()));
  }
  if (PyComplex_Check(obj.ptr())) {
    return ScalarValue(
        std::complex<double>(PyComplex_RealAsDouble(obj.ptr()), PyComplex_ImagAsDouble(obj.ptr())));
  }
  return std::nullopt;
}

py::object scalar_to_python(const ScalarValue& value) {
  if (value.is_bool()) {
    return py::bool_(value.as_bool());
  }
  if (value.is_int()) {
    return py::int_(value.as_int());
  }
  if (value.is_double()) {
    return py::float_(value.as_double());
  }
  if (value.is_complex()) {
    return py::cast(value.as_complex());
  }
  return py::none();
}

}  // namespace nvfuse

PYBIND11_MODULE(_C, m) {
  m.doc() = "nvfuse's C++ core: recording, IR, cache and execution";
  nvfuse::init_errors(m);
  nvfuse::init_enums(m);
  nvfuse::init_recording(m);
  nvfuse::init_cache(m);
  nvfuse::init_execute(m);
  nvfuse::init_multidevice(m);
}
