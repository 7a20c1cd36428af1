// nvfuse::Error -> the Python exception class of its kind. The classes are
// defined in nvfuse/errors.py (so they can subclass ValueError/TypeError)
// and handed to C++ once at import.
#include "bindings/bindings.h"
#include "ir/errors.h"

namespace py = pybind11;

namespace nvfuse {

namespace {

// Indexed by ErrorKind. Held for the process's lifetime.
py::object* error_classes[6] = {};

PyObject* python_class_of(ErrorKind kind) {
  py::object* cls = error_classes[static_cast<int>(kind)];
  return cls != nullptr ? cls->ptr() : PyExc_RuntimeError;
}

}  // namespace

void init_errors(py::module_& m) {
  m.def("_register_error_types",
      [](py::object definition, py::object definition_type, py::object input, py::object input_type,
          py::object unsupported, py::object internal) {
        const py::object classes[] = {
            definition, definition_type, input, input_type, unsupported, internal};
        for (int i = 0; i < 6; ++i) {
          delete error_classes[i];
          error_classes[i] = new py::object(classes[i]);
        }
      });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) {
        std::rethrow_exception(p);
      }
    } catch (const Error& e) {
      PyErr_SetString(python_class_of(e.kind()), e.what());
    }
  });
}

}  // namespace nvfuse
