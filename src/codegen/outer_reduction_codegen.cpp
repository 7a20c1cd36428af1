// The outer (column) reduction kernel, and the inner-outer finishing kernel
// (<name>_finish) that combines the column partials of every block.
#include <set>
#include <sstream>

#include "codegen/kernel_names.h"
#include "codegen/reduction_generator.h"

namespace nvfuse {

// ---- the outer kernel -------------------------------------------------------

std::string ReductionGenerator::outer_kernel() const {
  TensorSet loads;
  const std::vector<const Expr*> exprs = cone(element_roots(0), true, &loads);
  std::ostringstream ss;
  ss << "extern \"C\" __global__ void __launch_bounds__(" << p_.block_size << ") "
     << reduction_kernel_name(p_) << "(const Args args) {\n"
     << "  constexpr int kVec = " << p_.vector_width << ";\n"
     << "  constexpr int kX = " << p_.block_x << ";\n"
     << "  constexpr int kY = " << p_.block_y << ";\n"
     << "  constexpr int kOuterBatch = " << p_.outer_batch << ";\n";
  // Split over a cluster: the kCluster blocks of a column group are
  // consecutive in x, and block rank r walks rows r * kY + ty, ...
  const bool clustered = p_.cluster > 1;
  if (clustered) {
    ss << "  constexpr int kCluster = " << p_.cluster << ";\n"
       << "  const int rank = int(blockIdx.x % kCluster);  // in the cluster\n"
       << "  nvfuse::cluster_arrive();  // see cluster_wait below\n";
  }
  ss << "  const int ty = threadIdx.x / kX;\n"
     << "  const Index first = (Index(blockIdx.x" << (clustered ? " / kCluster" : "")
     << ") * kX + threadIdx.x % kX) * kVec;\n"
     << "  const bool col_valid = first < args.rows;\n"
     << row_offsets("col_valid ? first : Index(0)");
  // Per-row inputs (here: per column of the kept axes).
  for (size_t t = 0; t < a_.inputs.size(); ++t) {
    if (per_row(tensors_[t])) {
      const std::string name = name_of_value(tensors_[t]);
      ss << "  " << array_type(t) << " in_" << name << ";\n"
         << "  if (col_valid) {\n"
         << load(t, "in_" + name, "row_" + name, "    ") << "  }\n";
    }
  }
  for (const Expr* r : a_.reductions) {
    ss << "  " << acc_type(r) << " " << acc_name(r) << "[kVec];\n"
       << "#pragma unroll\n"
       << "  for (int v = 0; v < kVec; ++v) " << acc_name(r) << "[v] = " << op_type(r)
       << "::identity();\n";
  }
  ss << outer_row_walk(exprs, loads);
  ss << column_reduce_each();
  if (clustered) {
    ss << cluster_combine();
  } else if (p_.split) {
    ss << outer_split_combine();
  }
  ss << outer_column_epilogue() << "}\n";
  return ss.str();
}

// The walk down the rows, accumulating each thread's columns.
std::string ReductionGenerator::outer_row_walk(
    const std::vector<const Expr*>& exprs, const TensorSet& loads) const {
  std::ostringstream ss;
  const bool clustered = p_.cluster > 1;
  // The walk down the rows in batches of kOuterBatch row steps: every
  // step's loads of a batch go out (each behind its own row test) before
  // any step's math. The column test sits outside the loop: inside, each
  // step's loads sat in a branch with the math that used them, and the
  // compiler issued the next step's loads only after those values had
  // arrived. A `#pragma unroll 4` loop instead ran its remainder steps
  // first, one load in flight each: a bf16 sum over 8192 rows of 4096
  // (21 rows a thread) paid a memory round trip for one row. A row index
  // stays below width + kOuterBatch * step (step: at most a wave of blocks'
  // rows, well under 2^20), inside the 2^22 that 32-bit indexing keeps
  // free (fits_32bit in schedule/reductions/reduction_walk.cpp).
  ss << "  if (col_valid) {\n"
     << "    const Index step = Index(" << (clustered ? "kCluster" : "gridDim.y") << ") * kY;\n"
     << "    for (Index first_row = Index(" << (clustered ? "rank" : "blockIdx.y")
     << ") * kY + ty; first_row < args.width;\n"
     << "         first_row += kOuterBatch * step) {\n";
  const std::vector<const TensorView*> outputs = element_outputs(0);
  for (const TensorView* tv : loads) {
    if (!per_row(tv)) {
      ss << "      " << array_type(slot_of(tv)) << " batch_" << name_of_value(tv)
         << "[kOuterBatch];\n";
    }
  }
  ss << "#pragma unroll\n"
     << "      for (int b = 0; b < kOuterBatch; ++b) {\n"
     << "        const Index r = first_row + b * step;\n"
     << "        if (r < args.width) {\n";
  for (const TensorView* tv : loads) {
    if (!per_row(tv)) {
      ss << load(slot_of(tv), "batch_" + name_of_value(tv) + "[b]", down_offset(tv), "          ");
    }
  }
  ss << "        }\n"
     << "      }\n"
     << "#pragma unroll\n"
     << "      for (int b = 0; b < kOuterBatch; ++b) {\n"
     << "        const Index r = first_row + b * step;\n"
     << "        if (r >= args.width) continue;\n";
  for (const TensorView* tv : loads) {
    if (!per_row(tv)) {
      ss << "        const " << array_type(slot_of(tv)) << "& in_" << name_of_value(tv)
         << " = batch_" << name_of_value(tv) << "[b];\n";
    }
  }
  for (const TensorView* tv : outputs) {
    ss << "        " << array_type(slot_of(tv)) << " out_" << name_of_value(tv) << ";\n";
  }
  ss << declare_unit_words(exprs, "[kVec]", "        ")
     << draw_unit_words(unit_word_ops(exprs), Walk::kOuter, "", "        ");
  // The kVec columns' Welford states see the same rows: one count, one
  // pair of reciprocals a row step (welford_step).
  for (const Expr* r : a_.reductions) {
    if (r->is<VarMeanOp>()) {
      ss << "        const auto step_" << acc_name(r) << " = nvfuse::welford_step(" << acc_name(r)
         << "[0].count);\n";
    }
  }
  ss << "#pragma unroll\n"
     << "        for (int v = 0; v < kVec; ++v) {\n";
  for (const TensorView* tv : loads) {
    ss << "          const " << cuda_type_of(tv->dtype()) << " " << name_of_value(tv)
       << " = nvfuse::lane_of(in_" << name_of_value(tv) << ", " << lane(slot_of(tv)) << ");\n";
  }
  for (const Expr* expr : exprs) {
    ss << "          " << statement(expr, Walk::kOuter);
  }
  for (const Expr* r : a_.reductions) {
    const std::string value =
        "nvfuse::cast<" + acc_element(r) + ">(" + name_of_value(r->input(0)) + ")";
    if (r->is<VarMeanOp>()) {
      ss << "          " << acc_name(r) << "[v] = nvfuse::welford_add(" << acc_name(r) << "[v], "
         << value << ", step_" << acc_name(r) << ");\n";
    } else {
      ss << "          " << acc_name(r) << "[v] = " << op_type(r) << "()(" << acc_name(r) << "[v], "
         << value << ");\n";
    }
  }
  for (const TensorView* tv : outputs) {
    ss << "          out_" << name_of_value(tv) << ".val[v] = " << name_of_value(tv) << ";\n";
  }
  ss << "        }\n";
  for (const TensorView* tv : outputs) {
    const std::string name = name_of_value(tv);
    ss << store(slot_of(tv), "out_" + name, down_offset(tv), "        ");
  }
  ss << "      }\n    }\n  }\n";
  return ss.str();
}

// The rows split over gridDim.y blocks in groups of kOuterSplitGroup: each
// block writes its partial row, the last block of a group to arrive
// combines the group's into the group's first row, and the last of those
// combines the groups' (block order throughout, so results do not depend on
// timing). With one last block combining every partial row, that block's
// walk over them was the kernel's tail: 528 rows of a bf16 variance over
// 200704 x 256 columns (H200).
std::string ReductionGenerator::outer_split_combine() const {
  std::ostringstream ss;
  ss << "  constexpr int kSplitGroup = " << kOuterSplitGroup << ";\n"
     << "  const int groups = (int(gridDim.y) + kSplitGroup - 1) / kSplitGroup;\n"
     << "  const int group_first = int(blockIdx.y) / kSplitGroup * kSplitGroup;\n"
     << "  const int group_rows = min(int(gridDim.y) - group_first, kSplitGroup);\n"
     << "  // Per column block: the groups' counter, then one per group.\n"
     << "  unsigned* const counters = args.semaphores + Index(blockIdx.x) * (groups + 1);\n"
     << store_partial_row("blockIdx.y")
     << "  if (!nvfuse::arrive_last(counters + (groups > 1 ? 1 + group_first / kSplitGroup : 0),\n"
     << "          group_rows)) {\n"
     << "    return;\n"
     << "  }\n"
     << combine_partial_rows("group_first", "group_rows", "1") << "  if (groups > 1) {\n";
  ss << indented(column_reduce_each(), "  ") << indented(store_partial_row("group_first"), "  ")
     << "    if (!nvfuse::arrive_last(counters, groups)) return;\n"
     << indented(combine_partial_rows("0", "groups", "kSplitGroup"), "  ") << "  }\n";
  ss << column_reduce_each();
  return ss.str();
}

// Every reduction's kVec columns combined over the block's thread rows.
std::string ReductionGenerator::column_reduce_each() const {
  std::ostringstream ss;
  for (const Expr* r : a_.reductions) {
    ss << "  nvfuse::column_reduce_all<kX, kY, kVec>(" << acc_name(r) << ", " << op_type(r)
       << "());\n";
  }
  return ss.str();
}

std::vector<std::string> ReductionGenerator::partial_fields(const Expr* r) const {
  if (r->is<VarMeanOp>()) {
    return {".sum", ".m2", ".count"};  // partial_slot_bytes: three cells
  }
  return {""};
}

std::string ReductionGenerator::partial_plane(
    const Expr* r, size_t field, const std::string& g) const {
  return "args.workspace + (size_t(" + g + ") * " + std::to_string(cells_) + " + " +
      std::to_string(first_cell_.at(r) + static_cast<int>(field)) +
      ") * size_t(args.rows) * 8 + size_t(first) * sizeof(" + acc_element(r) + ")";
}

// Thread row 0 writes partial row `g` (after column_reduce_all).
std::string ReductionGenerator::store_partial_row(const std::string& g) const {
  std::ostringstream ss;
  ss << "  if (ty == 0 && col_valid) {\n";
  for (const Expr* r : a_.reductions) {
    const std::vector<std::string> fields = partial_fields(r);
    for (size_t f = 0; f < fields.size(); ++f) {
      const std::string name = "field_" + acc_name(r) + "_" + std::to_string(f);
      ss << "    " << acc_element(r) << " " << name << "[kVec];\n"
         << "#pragma unroll\n"
         << "    for (int v = 0; v < kVec; ++v) " << name << "[v] = " << acc_name(r) << "[v]"
         << fields[f] << ";\n"
         << "    nvfuse::store_columns(" << partial_plane(r, f, g) << ", " << name << ");\n";
    }
  }
  ss << "  }\n";
  return ss.str();
}

// Each thread row combines partial rows first + i * stride for i = ty,
// ty + kY, ... below `count`, unrolled so that kOuterBatch partial rows'
// loads are in flight at once: the last blocks' combine is the kernel's
// tail (a bf16 sum over 8192 rows of 4096, 49 partial rows: 52 -> 63% of
// copy bandwidth, H100).
std::string ReductionGenerator::combine_partial_rows(
    const std::string& first, const std::string& count, const std::string& stride) const {
  std::ostringstream ss;
  for (const Expr* r : a_.reductions) {
    ss << "#pragma unroll\n"
       << "  for (int v = 0; v < kVec; ++v) " << acc_name(r) << "[v] = " << op_type(r)
       << "::identity();\n";
  }
  ss << "#pragma unroll " << p_.outer_batch << "\n"
     << "  for (int i = ty; col_valid && i < " << count << "; i += kY) {\n"
     << "    const int g = " << first << " + i * " << stride << ";\n";
  for (const Expr* r : a_.reductions) {
    const std::vector<std::string> fields = partial_fields(r);
    std::vector<std::string> names;
    for (size_t f = 0; f < fields.size(); ++f) {
      names.push_back("part_" + acc_name(r) + "_" + std::to_string(f));
      ss << "    " << acc_element(r) << " " << names.back() << "[kVec];\n"
         << "    nvfuse::load_columns(" << partial_plane(r, f, "g") << ", " << names.back()
         << ");\n";
    }
    std::string value = names[0] + "[v]";
    if (r->is<VarMeanOp>()) {
      value = acc_type(r) + "{" + names[0] + "[v], " + names[1] + "[v], " + names[2] + "[v]}";
    }
    ss << "#pragma unroll\n"
       << "    for (int v = 0; v < kVec; ++v) " << acc_name(r) << "[v] = " << op_type(r) << "()("
       << acc_name(r) << "[v], " << value << ");\n";
  }
  ss << "  }\n";
  return ss.str();
}

// Per-column values and outputs, once per column (thread row 0).
std::string ReductionGenerator::outer_column_epilogue() const {
  std::ostringstream ss;
  ss << "  if (ty == 0 && col_valid) {\n";
  std::vector<const TensorView*> row_outputs;
  for (size_t t = a_.inputs.size(); t < tensors_.size(); ++t) {
    if (per_row(tensors_[t])) {
      row_outputs.push_back(tensors_[t]);
      ss << "    " << array_type(t) << " out_" << name_of_value(tensors_[t]) << ";\n";
    }
  }
  ss << "#pragma unroll\n"
     << "    for (int v = 0; v < kVec; ++v) {\n";
  for (size_t t = 0; t < a_.inputs.size(); ++t) {
    if (per_row(tensors_[t])) {
      const std::string name = name_of_value(tensors_[t]);
      ss << "      const " << cuda_type_of(tensors_[t]->dtype()) << " " << name
         << " = nvfuse::lane_of(in_" << name << ", " << lane(t) << ");\n";
    }
  }
  for (const Expr* expr : a_.exprs) {
    if (is_reduction(expr)) {
      ss << finalize(expr, acc_name(expr) + "[v]", "      ");
    } else if (per_row(expr->output(0)->as<TensorView>())) {
      ss << "      " << statement(expr, Walk::kOuterRow);
    }
  }
  for (const TensorView* tv : row_outputs) {
    ss << "      out_" << name_of_value(tv) << ".val[v] = " << name_of_value(tv) << ";\n";
  }
  ss << "    }\n";
  for (const TensorView* tv : row_outputs) {
    const std::string name = name_of_value(tv);
    ss << store(slot_of(tv), "out_" + name, "row_" + name, "    ");
  }
  ss << "  }\n";
  return ss.str();
}

std::string ReductionGenerator::cluster_combine() const {
  std::ostringstream ss;
  ss << "  // The cluster's blocks push their column results into block rank\n"
     << "  // 0's shared memory, which combines them in rank order.\n";
  for (const Expr* r : a_.reductions) {
    ss << "  __shared__ " << acc_type(r) << " ranks_" << acc_name(r) << "[kCluster * kX * kVec];\n";
  }
  ss << "  nvfuse::cluster_wait();  // every block has started: its shared memory exists\n"
     << "  if (ty == 0) {\n"
     << "#pragma unroll\n"
     << "    for (int v = 0; v < kVec; ++v) {\n";
  for (const Expr* r : a_.reductions) {
    ss << "      nvfuse::store_to_block(&ranks_" << acc_name(r)
       << "[(rank * kX + threadIdx.x % kX) * kVec + v], 0u, " << acc_name(r) << "[v]);\n";
  }
  ss << "    }\n  }\n"
     << "  nvfuse::cluster_sync();\n"
     << "  if (rank != 0) return;\n"
     << "  // Thread row ty takes ranks ty, ty + kY, ...; then the tree over the\n"
     << "  // thread rows: rank order, so results do not depend on timing.\n";
  for (const Expr* r : a_.reductions) {
    const std::string acc = acc_name(r);
    ss << "#pragma unroll\n"
       << "  for (int v = 0; v < kVec; ++v) {\n"
       << "    " << acc << "[v] = " << op_type(r) << "::identity();\n"
       << "    for (int q = ty; q < kCluster; q += kY) {\n"
       << "      " << acc << "[v] = " << op_type(r) << "()(" << acc << "[v], ranks_" << acc
       << "[(q * kX + threadIdx.x % kX) * kVec + v]);\n"
       << "    }\n  }\n"
       << "  nvfuse::column_reduce_all<kX, kY, kVec>(" << acc << ", " << op_type(r) << "());\n";
  }
  return ss.str();
}

// ---- inner-outer: the finishing kernel --------------------------------------

std::string ReductionGenerator::column_finish_kernel() const {
  // Each thread takes kN adjacent columns (one 16-byte load a partial row
  // where the partials are floats and the rows' vectors are 4 wide) and
  // loads kFinishBatch partial rows before it adds them (in row order, so
  // the sums do not depend on timing): a load at a time kept about 1 MB in
  // flight on an H100, and the kernel took 29 us of layer-norm backward
  // bf16 8192x4096's 132.
  bool float_partials = p_.vector_width % 4 == 0;
  for (const Expr* r : a_.outer_reductions) {
    float_partials = float_partials && acc_type(r) == "float";
  }
  std::ostringstream ss;
  ss << "extern \"C\" __global__ void __launch_bounds__(" << kFinishThreads << ") "
     << reduction_finish_kernel_name(p_) << "(const Args args) {\n"
     << "  nvfuse::wait_for_previous_grid();  // the row kernel's partials\n"
     << "  constexpr int kN = " << (float_partials ? 4 : 1) << ";  // columns of a thread\n"
     << "  constexpr int kBatch = " << kFinishBatch << ";\n"
     << "  // The block's columns, as the launch computed them (finish_columns).\n"
     << "  const int block_columns = args.partial_rows <= " << kFinishWideRows << " ? "
     << kFinishWideColumns << " : " << kFinishTallColumns << ";\n"
     << "  const int threads_x = block_columns / kN;\n"
     << "  const int threads_y = " << kFinishThreads << " / threads_x;\n"
     << "  const int ty = threadIdx.x / threads_x;\n"
     << "  const Index first_col = Index(blockIdx.x) * block_columns + (threadIdx.x % threads_x) * "
        "kN;\n"
     << "  const bool col_valid = first_col < args.width;\n"
     << column_regions("args.workspace", "args.partial_rows", "args.width", "partial_", "  ");
  // Every reduction's batch in one loop: their loads are in flight together.
  std::string loads;
  std::string adds;
  for (const Expr* r : a_.outer_reductions) {
    const std::string acc = acc_name(r);
    const std::string type = acc_type(r);
    const std::string at = column_name(r, "partial_") + " + p * args.width + first_col";
    ss << "  " << type << " " << acc << "[kN];\n"
       << "#pragma unroll\n"
       << "  for (int n = 0; n < kN; ++n) " << acc << "[n] = " << op_type(r) << "::identity();\n";
    // A float vector, or one value of any accumulator (a Welford state has
    // no vector type).
    const std::string load = float_partials
        ? "const nvfuse::Array<float, kN> vector = *reinterpret_cast<const "
          "nvfuse::Array<float, kN>*>(" +
            at +
            ");\n"
            "#pragma unroll\n"
            "        for (int n = 0; n < kN; ++n) loaded_" +
            acc + "[i][n] = vector.val[n];\n"
        : "loaded_" + acc + "[i][0] = *(" + at + ");\n";
    loads += "    " + type + " loaded_" + acc +
        "[kBatch][kN];\n"
        "#pragma unroll\n    for (int i = 0; i < kBatch; ++i) {\n"
        "      const Index p = first + i * threads_y;\n"
        "      if (p < args.partial_rows) {\n        " +
        load + "      }\n    }\n";
    adds +=
        "#pragma unroll\n    for (int i = 0; i < kBatch; ++i) {\n"
        "      if (first + i * threads_y < args.partial_rows) {\n#pragma unroll\n"
        "        for (int n = 0; n < kN; ++n) " +
        acc + "[n] = " + op_type(r) + "()(" + acc + "[n], loaded_" + acc +
        "[i][n]);\n      }\n    }\n";
  }
  ss << "  for (Index first = ty; col_valid && first < args.partial_rows; "
        "first += kBatch * threads_y) {\n"
     << loads << adds << "  }\n";
  for (const Expr* r : a_.outer_reductions) {
    ss << "  nvfuse::column_reduce_shaped<" << kFinishThreads << ", kN>(" << acc_name(r) << ", "
       << op_type(r) << "(), threads_x);\n";
  }
  ss << "  if (ty != 0 || !col_valid) return;\n"
     << "#pragma unroll\n"
     << "  for (int n = 0; n < kN; ++n) {\n"
     << "    const Index col = first_col + n;\n";
  for (const Expr* r : a_.outer_reductions) {
    ss << finalize(r, acc_name(r) + "[n]", "    ");
  }
  for (const Expr* expr : a_.column_exprs) {
    ss << "    " << statement(expr, Walk::kRow);
  }
  for (const TensorView* tv : a_.column_outputs) {
    const std::string name = name_of_value(tv);
    ss << "    args." << name << "[col * args.col_stride_" << name << "] = " << name << ";\n";
  }
  ss << "  }\n}\n";
  return ss.str();
}

}  // namespace nvfuse
