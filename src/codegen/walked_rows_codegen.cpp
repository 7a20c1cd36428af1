// The inner kernel's rows that one wave of blocks (or clusters) walks
// grid-stride: pipelined rows (the next row's inputs loaded into registers
// while the block reduces this one) and staged rows (the next row's copies
// in shared memory, cp.async), with the staged inner-outer rows' register
// column partials, and the partial clusters' combine of every inner-outer
// kernel's partials (ReductionParams::partial_cluster).
#include <sstream>

#include "codegen/reduction_generator.h"

namespace nvfuse {

std::string ReductionGenerator::pipelined_rows() const {
  std::ostringstream ss;
  ss << "  // Pipelined: one wave of blocks walks the rows grid-stride; each row's\n"
     << "  // inputs were loaded while the block reduced the row before.\n"
     << "  constexpr int kRows = kBlock / kLanes;\n"
     << "  const Index row_step = Index(gridDim.x) * kRows;\n";
  for (const TensorView* tv : held_inputs()) {
    ss << "  " << array_type(slot_of(tv)) << " in_" << name_of_value(tv) << "[kGroups];\n";
  }
  ss << load_held_row("in_", "Index(blockIdx.x) * kRows + threadIdx.x / kLanes", "  ")
     << "  for (Index first = Index(blockIdx.x) * kRows; first < args.rows; "
        "first += row_step) {\n"
     << "    const Index row = first + threadIdx.x / kLanes;\n"
     << indented(row_body(), "  ");
  for (const TensorView* tv : held_inputs()) {
    const std::string name = name_of_value(tv);
    ss << "#pragma unroll\n"
       << "    for (int k = 0; k < kGroups; ++k) in_" << name << "[k] = next_" << name << "[k];\n";
  }
  ss << "  }\n";
  return ss.str();
}

std::string ReductionGenerator::staged_rows() const {
  const bool cluster = p_.cluster > 1;
  std::ostringstream ss;
  ss << "  // Staged: one wave of blocks" << (cluster ? " (clusters)" : "")
     << " walks the rows; each thread copies\n"
     << "  // its groups of the next row into one shared buffer while the current\n"
     << "  // row computes from the other.\n"
     << "  constexpr int kRows = kBlock / kLanes;\n"
     << "  const Index walker = Index(blockIdx.x" << (cluster ? " / kCluster" : "") << ");\n"
     << "  const Index row_step = Index(gridDim.x" << (cluster ? " / kCluster" : "")
     << ") * kRows;\n"
     << "  extern __shared__ __align__(16) char stage_shared[];\n";
  // Each held input's two buffers of kGroups x kBlock groups, one after the
  // other (ReductionSchedule::shared_bytes: their sum).
  std::string offset = "0";
  for (const TensorView* tv : held_inputs()) {
    const std::string type = array_type(slot_of(tv));
    ss << "  " << type << "* const stage_" << name_of_value(tv) << " = reinterpret_cast<" << type
       << "*>(stage_shared + " << offset << ");\n";
    offset += " + 2 * kGroups * kBlock * sizeof(" + type + ")";
  }
  std::string columns;
  for (const TensorView* tv : a_.inputs) {
    if (column_held(tv)) {
      const size_t t = slot_of(tv);
      ss << "  " << array_type(t) << " in_" << name_of_value(tv) << "[kGroups];\n";
      columns += load(t, "in_" + name_of_value(tv) + "[k]", column_offset(t), "");
    }
  }
  if (!columns.empty()) {
    ss << "  {  // the per-column inputs of this thread's columns, for every row\n"
       << thread_groups_of_row("Index(0)", columns, "  ") << "  }\n";
  }
  if (p_.inner_outer) {
    ss << register_column_partials();
  }
  // Per-row inputs (a mean, a reciprocal deviation) are loaded with the
  // row's copies, a row ahead: loaded by the row that reads them, they
  // stalled its first phase on a memory round trip.
  std::string this_row_values;
  for (const TensorView* tv : per_row_inputs()) {
    const std::string type = cuda_type_of(tv->dtype());
    const std::string name = name_of_value(tv);
    ss << "  " << type << " next_" << name << "{};  // the next row's\n";
    this_row_values += "    const " + type + " staged_" + name + " = next_" + name + ";\n";
  }
  ss << stage_held_row("0", "walker * kRows + threadIdx.x / kLanes", "  ") << "  int buffer = 0;\n"
     << (cluster ? "  int cluster_round = 0;  // see nvfuse::cluster_reduce\n" : "")
     << "  for (Index first = walker * kRows; first < args.rows; first += row_step) {\n"
     << "    const Index row = first + threadIdx.x / kLanes;\n"
     << this_row_values << stage_held_row("buffer ^ 1", "row + row_step", "    ")
     << "    nvfuse::copy_async_wait<1>();  // this row's copies have landed\n"
     << indented(row_body(), "  ") << "    buffer ^= 1;\n"
     << (cluster ? "    ++cluster_round;\n" : "") << "  }\n";
  if (p_.inner_outer) {
    ss << store_register_partials();
  }
  return ss.str();
}

std::string ReductionGenerator::register_column_partials() const {
  std::ostringstream ss;
  ss << "  // Inner-outer: each thread's partial results for its columns (the\n"
     << "  // same ones in every row), in registers.\n";
  std::string clear;
  for (const Expr* r : a_.outer_reductions) {
    ss << "  nvfuse::Array<" << acc_type(r) << ", kVec> " << column_name(r) << "[kGroups];\n";
    clear += column_name(r) + "[k].val[v] = " + op_type(r) + "::identity();\n";
  }
  ss << "#pragma unroll\n"
     << "  for (int k = 0; k < kGroups; ++k) {\n"
     << "#pragma unroll\n"
     << "    for (int v = 0; v < kVec; ++v) {\n"
     << indented(clear, "      ") << "    }\n  }\n";
  return ss.str();
}

std::string ReductionGenerator::store_register_partials() const {
  if (p_.partial_cluster > 1) {
    // Into the staged buffers (every copy landed, every thread done with
    // its last row), then combined over the cluster.
    std::string copy;
    for (const Expr* r : a_.outer_reductions) {
      copy += "for (int v = 0; v < kVec; ++v) " + column_name(r, "shared_") +
          "[col + v] = " + column_name(r) + "[k].val[v];\n";
    }
    return "  nvfuse::copy_async_wait<0>();\n"
           "  __syncthreads();\n"
           "  {  // this thread's partial results, into shared memory\n" +
        column_regions("stage_shared", "1", "kGroups * kBlock * kVec", "shared_", "    ") +
        thread_groups_of_row("Index(0)", copy, "  ") +
        combine_cluster_partials("shared_", "args.width", "    ") + "  }\n";
  }
  std::string copy;
  for (const Expr* r : a_.outer_reductions) {
    copy += "for (int v = 0; v < kVec; ++v) " + column_name(r, "partial_") +
        "[partial_row * args.width + col + v] = " + column_name(r) + "[k].val[v];\n";
  }
  return "  {  // this thread's partial results, for the finishing kernel\n" +
      column_regions("args.workspace", "args.partial_rows", "args.width", "partial_", "    ") +
      "    const Index partial_row = walker * kRows + threadIdx.x / kLanes;\n" +
      thread_groups_of_row("Index(0)", copy, "  ") + "  }\n";
}

std::string ReductionGenerator::combine_cluster_partials(
    const std::string& prefix, const std::string& n, const std::string& indent) const {
  std::string combine;
  for (const Expr* r : a_.outer_reductions) {
    combine += indent + "nvfuse::combine_cluster_partials<" + std::to_string(p_.partial_cluster) +
        ", kBlock>(" + column_name(r, prefix) + ", int(" + n + "), " + column_name(r, "partial_") +
        " + partial_row * args.width, " + op_type(r) + "());\n";
  }
  return indent + "// The cluster's blocks combine their partials in rank order into the\n" +
      indent + "// cluster's partial rows, for the finishing kernel.\n" + indent +
      "nvfuse::cluster_sync();  // every block's partials are in its shared memory\n" +
      column_regions("args.workspace", "args.partial_rows", "args.width", "partial_", indent) +
      indent + "const Index partial_row = Index(blockIdx.x / " +
      std::to_string(p_.partial_cluster) + ") * kRows;\n" + combine + indent +
      "nvfuse::cluster_sync();  // its shared memory stays while the others read it\n";
}

std::string ReductionGenerator::stage_held_row(
    const std::string& buffer, const std::string& row, const std::string& indent) const {
  std::string copies;
  for (const TensorView* tv : held_inputs()) {
    const size_t t = slot_of(tv);
    const std::string name = name_of_value(tv);
    copies += "nvfuse::copy_async(stage_" + name + " + ((" + buffer +
        ") * kGroups + k) * kBlock + threadIdx.x, reinterpret_cast<const " + array_type(t) +
        "*>(args." + name + " + " + column_offset(t) + "));\n";
  }
  std::string row_values;
  for (const TensorView* tv : per_row_inputs()) {
    const std::string name = name_of_value(tv);
    row_values += indent + "    next_" + name + " = args." + name + "[row_" + name + "];\n";
  }
  return indent + "{\n" + indent + "  const Index staged_row = " + row + ";\n" + indent +
      "  if (staged_row < args.rows) {\n" +
      thread_groups_of_row("staged_row", copies, indent + "  ") + row_values + indent + "  }\n" +
      indent + "  nvfuse::copy_async_commit();\n" + indent + "}\n";
}

std::string ReductionGenerator::thread_groups_of_row(
    const std::string& row, const std::string& body, const std::string& indent) const {
  const std::string chunk = p_.cluster > 1 ? "Index(blockIdx.x % kCluster)" : "Index(0)";
  return indented(row_offsets(row), indent) + "#pragma unroll\n" + indent +
      "  for (int k = 0; k < kGroups; ++k) {\n" + indent + "    const Index col = ((" + chunk +
      " * kGroups + k) * kLanes + lane) * kVec;\n" + indent + "    if (col < args.width) {\n" +
      indented(body, indent + "      ") + indent + "    }\n" + indent + "  }\n";
}

std::string ReductionGenerator::load_held_row(
    const std::string& prefix, const std::string& row, const std::string& indent) const {
  std::ostringstream ss;
  ss << indent << "{\n"
     << indent << "  const Index loaded_row = " << row << ";\n"
     << indented(row_offsets("loaded_row < args.rows ? loaded_row : Index(0)"), indent)
     << "#pragma unroll\n"
     << indent << "  for (int k = 0; k < kGroups; ++k) {\n"
     << indent << "    const Index col = (Index(k) * kLanes + lane) * kVec;\n"
     << indent << "    if (loaded_row < args.rows && col < args.width) {\n";
  for (const TensorView* tv : held_inputs()) {
    const size_t t = slot_of(tv);
    ss << load(t, prefix + name_of_value(tv) + "[k]", column_offset(t), indent + "      ");
  }
  ss << indent << "    }\n" << indent << "  }\n" << indent << "}\n";
  return ss.str();
}

}  // namespace nvfuse
