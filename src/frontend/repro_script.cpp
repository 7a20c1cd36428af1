// Printing a definition back as Python: the body of print(fd), the repro
// script attached to internal errors, and fd.repro_script().
#include <algorithm>
#include <sstream>

#include "frontend/recording_state.h"

namespace nvfuse {

std::string python_definition(
    const std::vector<Record>& records, const std::string& function_name) {
  std::ostringstream ss;
  ss << "def " << function_name << "(fd : FusionDefinition) -> None :\n";
  for (const Record& record : records) {
    ss << "    " << record.to_python() << "\n";
  }
  if (records.empty()) {
    ss << "    pass\n";
  }
  return ss.str();
}

std::string repro_script(const std::vector<Record>& records, const std::string& function_name) {
  std::ostringstream ss;
  const bool sharded = std::any_of(records.begin(), records.end(), [](const Record& r) {
    return r.kind == RecordKind::SetDeviceMesh || r.kind == RecordKind::ParallelizeAxis;
  });
  ss << "import torch\n"
     << (sharded ? "from nvfuse import FusionDefinition, DataType, ParallelType\n"
                   "from nvfuse.multidevice import DeviceMesh\n\n"
                 : "from nvfuse import FusionDefinition, DataType\n\n")
     << python_definition(records, function_name) << "\n"
     << "with FusionDefinition() as fd:\n"
     << "    " << function_name << "(fd)\n";
  return ss.str();
}

}  // namespace nvfuse
