#include "backend/check/step_check.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/check/reduction_rule.h"
#include "backend/device/deterministic.h"
#include "core/trace/op_id.h"

namespace shardscope::backend {
namespace {

// Element i of a buffer of `dtype` as float (the dtypes FSDP2 buffers take).
float Load(DType dtype, const char* base, int64_t i) {
  switch (dtype) {
    case DType::kBFloat16: {
      uint16_t b;
      std::memcpy(&b, base + i * 2, 2);
      return Bf16BitsToFloat(b);
    }
    case DType::kFloat64: {
      double d;
      std::memcpy(&d, base + i * 8, 8);
      return static_cast<float>(d);
    }
    default: {
      float f;
      std::memcpy(&f, base + i * 4, 4);
      return f;
    }
  }
}

bool Checkable(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kBFloat16; }

// Value of the reference parameter / gradient element after the casts the step applies.
float ParamIn(const ParamLayout& p, int64_t row, int64_t col, DType to) {
  return RoundTo(to, RoundTo(p.own_dtype, ParamValue(p.fqn, row * p.cols + col)));
}
float GradIn(int rank, const ParamLayout& p, int64_t row, int64_t col, DType reduce) {
  return RoundTo(reduce, RoundTo(p.gather_dtype, GradValue(rank, p.fqn, row * p.cols + col)));
}

// torch.optim.AdamW (foreach, step 1 from zero moments) on one element, in double.
double AdamWStep(double p, double g, const ExecOptions& o, int step) {
  const double lr = o.lr, b1 = o.beta1, b2 = o.beta2;
  p *= 1.0 - lr * o.weight_decay;
  const double m = (1.0 - b1) * g;
  const double v = (1.0 - b2) * g * g;
  const double bc1 = 1.0 - std::pow(b1, step);
  const double bc2 = 1.0 - std::pow(b2, step);
  const double denom = std::sqrt(v) / std::sqrt(bc2) + o.eps;
  return p - (lr / bc1) * m / denom;
}

// Collects mismatches (the first few as text) and counts comparisons.
struct Tally {
  CheckReport* report;
  int rank;
  void Compare(const std::string& op_id, const std::string& what, float got, float want) {
    ++report->elements;
    if (got == want || (std::isnan(got) && std::isnan(want))) return;
    Miss(op_id, what, got, want, "");
  }
  // Relative to the larger of `want` and `scale`: an update that cancels most of the
  // parameter is judged against the parameter's magnitude, where float32 rounded, not
  // against the small result.
  void Near(const std::string& op_id, const std::string& what, float got, double want, double scale,
            double rel) {
    ++report->elements;
    const double d = std::abs(static_cast<double>(got) - want);
    scale = std::max({std::abs(want), std::abs(scale), 1e-30});
    if (d <= rel * scale) return;
    Miss(op_id, what, got, static_cast<float>(want),
         fmt::format(" (relative difference {:.3g} > {:g})", d / scale, rel));
  }
  void Miss(const std::string& op_id, const std::string& what, float got, float want,
            const std::string& extra) {
    ++report->mismatches;
    if (static_cast<int>(report->first_mismatches.size()) < CheckReport::kMaxListed) {
      report->first_mismatches.push_back(fmt::format("rank {}: {}: {} is {:.9g}, expected {:.9g}{}",
                                                     rank, op_id, what, got, want, extra));
    }
  }
};

std::string Where(const ParamLayout& p, int64_t row, int64_t col, const char* part, int slot) {
  return fmt::format("{} {} element [{}, {}] ({}{})", part, p.fqn, row, col,
                     slot >= 0 ? fmt::format("slot of shard rank {}", slot) : "this rank's block",
                     row >= p.rows ? ", padding" : "");
}

}  // namespace

std::string CheckReport::Text(int rank) const {
  return fmt::format(
      "check: rank {}: {} all-gathers, {} reduce-scatters, {} all-reduces, {} optimizer "
      "tensors verified ({} elements){}",
      rank, all_gathers, reduce_scatters, all_reduces, optimizer_tensors, elements,
      mismatches == 0 ? ": all as the plan promises"
                      : fmt::format(": {} elements differ", mismatches));
}

StepChecker::StepChecker(const Schedule& schedule, const Plan& plan, const ExecOptions& exec)
    : s_(schedule), plan_(plan), exec_(exec) {
  rank_ = s_.roles.empty() ? 0 : s_.roles[0].rank;
  // The unit's shard index is this rank's position in its all-gather's group (as the executor
  // derives it), its persistent buffers matched by unit and size as the executor does.
  std::map<std::string, int> shard_index, reduce_scatter;
  for (size_t i = 0; i < s_.ops.size(); ++i) {
    const ScheduleOp& op = s_.ops[i];
    if (op.group < 0) continue;
    const ProcessGroup& g = s_.groups[op.group];
    const int pos =
        static_cast<int>(std::find(g.ranks.begin(), g.ranks.end(), rank_) - g.ranks.begin());
    if (op.type == OpType::kAllGather && op.collective.output_buffer >= 0) {
      shard_index.emplace(UnitOpLabel(op.unit), pos);
    } else if (op.type == OpType::kReduceScatter && op.collective.output_buffer >= 0) {
      reduce_scatter.emplace(UnitOpLabel(op.unit), static_cast<int>(i));
    }
  }
  for (const UnitPlan& u : plan_.units) {
    const std::string label = UnitOpLabel(u.fqn);
    UnitRef& r = units_[label];
    r.plan = &u;
    const auto it = shard_index.find(label);
    r.layout = MakeUnitLayout(u, it == shard_index.end() ? 0 : it->second);
    if (const auto rs = reduce_scatter.find(label); rs != reduce_scatter.end()) {
      r.reduce_scatter = rs->second;
    }
  }
  for (const Buffer& b : s_.buffers) {
    if (b.alloc_op >= 0 || b.category != MemCategory::kShardedParams || b.host) continue;
    auto it = units_.find(b.unit);
    if (it == units_.end()) continue;
    UnitRef& r = it->second;
    if (r.shard < 0 && b.bytes == r.layout.sizes.shard_bytes) {
      r.shard = b.id;
    } else if (r.replicate < 0 && b.bytes == r.layout.sizes.replicate_bytes) {
      r.replicate = b.id;
    }
  }
}

const StepChecker::UnitRef* StepChecker::UnitOf(const std::string& unit_fqn) const {
  const auto it = units_.find(UnitOpLabel(unit_fqn));
  return it == units_.end() ? nullptr : &it->second;
}

Status StepChecker::Copy(const ExecContext& ctx, Lane lane, int buffer, std::vector<char>& out) {
  const DeviceBuffer& b = ctx.buffer(buffer);
  if (b.data == nullptr) {
    return RuntimeError(
        fmt::format("run --check: buffer {} is not live when it is checked", buffer));
  }
  out.resize(static_cast<size_t>(b.bytes));
  return ctx.device->Memcpy(lane, out.data(), b.data, b.bytes);
}

Status StepChecker::AfterOp(int i, const ExecContext& ctx) {
  if (ctx.step != 0) return Status::Ok();
  const ScheduleOp& op = s_.ops[i];
  if (op.type == OpType::kOptimizer && !op.on_host) {
    for (const auto& [label, u] : units_) {
      for (int id : {u.shard, u.replicate}) {
        if (id >= 0) SS_RETURN_IF_ERROR(Copy(ctx, op.lane, id, final_params_[id]));
      }
    }
    return Status::Ok();
  }
  const bool checked = op.type == OpType::kAllGather || op.type == OpType::kReduceScatter ||
                       op.type == OpType::kAllReduce;
  if (!checked || op.collective.output_buffer < 0 || UnitOf(op.unit) == nullptr) {
    return Status::Ok();
  }
  Snapshot snap;
  snap.op = i;
  collectives_.push_back(std::move(snap));
  Snapshot& s = collectives_.back();
  if (op.type == OpType::kReduceScatter && op.collective.input_buffer >= 0) {
    SS_RETURN_IF_ERROR(Copy(ctx, op.lane, op.collective.input_buffer, s.input));
  }
  return Copy(ctx, op.lane, op.collective.output_buffer, s.output);
}

Status StepChecker::AfterRun(const ExecContext&) { return Status::Ok(); }

Status StepChecker::Verify(CheckReport* report) const {
  *report = CheckReport{};
  Tally tally{report, rank_};
  // Reduced gradient element (unit, param, row of the local tensor, col) after the unit's
  // reduce-scatter and, with HSDP, its all-reduce: what the optimizer reads.
  std::map<const UnitRef*, int> hsdp_all_reduce;  // unit → its HSDP all-reduce op

  // The reduce-scatter reference for a shard group shifted by `offset` world ranks (a replica).
  auto reduce_scatter_ref = [&](const UnitRef& u, const ParamLayout& p, int64_t row, int64_t col,
                                int offset) -> float {
    const ScheduleOp& rs = s_.ops[u.reduce_scatter];
    const ProcessGroup& g = s_.groups[rs.group];
    const ReductionRule rule(rs.collective, g.size());
    double sum = 0;
    if (row < p.rows) {
      for (int m : g.ranks) sum += rule.Input(GradIn(m + offset, p, row, col, rs.collective.dtype));
    }
    return rule.Output(sum);
  };
  auto hsdp_ref = [&](const UnitRef& u, const ParamLayout& p, int64_t row, int64_t col,
                      const ScheduleOp& ar) -> float {
    const ProcessGroup& g = s_.groups[ar.group];
    const ReductionRule rule(ar.collective, g.size());
    double sum = 0;
    for (int q : g.ranks) sum += rule.Input(reduce_scatter_ref(u, p, row, col, q - rank_));
    return rule.Output(sum);
  };

  for (const Snapshot& snap : collectives_) {
    const ScheduleOp& op = s_.ops[snap.op];
    const UnitRef& u = *UnitOf(op.unit);
    const UnitLayout& L = u.layout;
    const ProcessGroup& g = s_.groups[op.group];
    const int S = L.sizes.shard_group;
    if (op.type == OpType::kAllGather) {
      ++report->all_gathers;
      for (int slot = 0; slot < S; ++slot) {
        for (const ParamLayout& p : L.params) {
          if (!Checkable(p.gather_dtype)) continue;
          const char* base = snap.output.data() + slot * L.shard_slot_bytes + p.gather_offset;
          for (int64_t r = 0; r < p.shard_rows; ++r) {
            const int64_t row = slot * p.shard_rows + r;
            for (int64_t c = 0; c < p.cols; ++c) {
              const float want = row < p.rows ? ParamIn(p, row, c, p.gather_dtype) : 0.0f;
              tally.Compare(op.op_id, Where(p, row, c, "gathered", slot),
                            Load(p.gather_dtype, base, r * p.cols + c), want);
            }
          }
        }
      }
    } else if (op.type == OpType::kReduceScatter) {
      ++report->reduce_scatters;
      const DType d = op.collective.dtype;
      if (!Checkable(d)) continue;
      if (!snap.input.empty()) {
        for (int block = 0; block < S; ++block) {
          for (const ParamLayout& p : L.params) {
            if (!p.requires_grad || p.reduce_offset < 0) continue;
            const char* base = snap.input.data() + block * L.reduce_block_bytes + p.reduce_offset;
            for (int64_t r = 0; r < p.shard_rows; ++r) {
              const int64_t row = block * p.shard_rows + r;
              for (int64_t c = 0; c < p.cols; ++c) {
                const float want = row < p.rows ? GradIn(rank_, p, row, c, d) : 0.0f;
                tally.Compare(op.op_id, Where(p, row, c, "reduce-scatter input", block),
                              Load(d, base, r * p.cols + c), want);
              }
            }
          }
        }
      }
      for (const ParamLayout& p : L.params) {
        if (!p.requires_grad || p.reduce_offset < 0) continue;
        const char* base = snap.output.data() + p.reduce_offset;
        for (int64_t r = 0; r < p.shard_rows; ++r) {
          const int64_t row = p.first_row + r;
          for (int64_t c = 0; c < p.cols; ++c) {
            tally.Compare(op.op_id, Where(p, row, c, "reduced", -1), Load(d, base, r * p.cols + c),
                          reduce_scatter_ref(u, p, row, c, 0));
          }
        }
      }
    } else if (op.type == OpType::kAllReduce) {
      ++report->all_reduces;
      const DType d = op.collective.dtype;
      if (!Checkable(d)) continue;
      const bool hsdp = g.dims == std::vector<std::string>{"fsdp_replicate"};
      if (hsdp && u.reduce_scatter >= 0) {
        hsdp_all_reduce[&u] = snap.op;
        for (const ParamLayout& p : L.params) {
          if (!p.requires_grad || p.reduce_offset < 0) continue;
          const char* base = snap.output.data() + p.reduce_offset;
          for (int64_t r = 0; r < p.shard_rows; ++r) {
            const int64_t row = p.first_row + r;
            for (int64_t c = 0; c < p.cols; ++c) {
              tally.Compare(op.op_id, Where(p, row, c, "replica-reduced", -1),
                            Load(d, base, r * p.cols + c), hsdp_ref(u, p, row, c, op));
            }
          }
        }
      } else {
        // Replicate params: whole gradients over the data-parallel group, reduced in the
        // reduce dtype; the buffer keeps the gradients' dtype (cast in and back out when the
        // two differ, the cast copy having no buffer of its own).
        const ReductionRule rule(op.collective, g.size());
        const DType held = s_.buffers[op.collective.output_buffer].dtype;
        const DType stored = Checkable(held) ? held : d;
        for (const ParamLayout& p : L.replicate) {
          if (!p.requires_grad) continue;
          const int64_t first = p.grad_offset / DTypeBytes(p.gather_dtype);
          for (int64_t row = 0; row < p.rows; ++row) {
            for (int64_t c = 0; c < p.cols; ++c) {
              double sum = 0;
              for (int m : g.ranks) sum += rule.Input(GradIn(m, p, row, c, d));
              tally.Compare(op.op_id, Where(p, row, c, "all-reduced", -1),
                            Load(stored, snap.output.data(), first + row * p.cols + c),
                            RoundTo(stored, rule.Output(sum)));
            }
          }
        }
      }
    }
  }

  // The optimizer: every shard (and replicate tensor) after step 1 of AdamW.
  for (const auto& [label, u] : units_) {
    if (u.plan->offload) continue;  // stepped on the host from host buffers
    const auto hsdp = hsdp_all_reduce.find(&u);
    if (const auto it = final_params_.find(u.shard); it != final_params_.end()) {
      for (const ParamLayout& p : u.layout.params) {
        if (!Checkable(p.own_dtype)) continue;
        ++report->optimizer_tensors;
        const double rel = p.own_dtype == DType::kFloat32 ? 1e-6 : 0x1p-8;
        const char* base = it->second.data() + p.shard_offset;
        for (int64_t r = 0; r < p.shard_rows; ++r) {
          const int64_t row = p.first_row + r;
          for (int64_t c = 0; c < p.cols; ++c) {
            const float got = Load(p.own_dtype, base, r * p.cols + c);
            const std::string what = Where(p, row, c, "updated parameter", -1);
            if (r >= p.valid_rows) {
              tally.Compare("step/optimizer", what, got, 0.0f);
              continue;
            }
            const double p0 = RoundTo(p.own_dtype, ParamValue(p.fqn, row * p.cols + c));
            if (!p.requires_grad || u.reduce_scatter < 0) {
              tally.Compare("step/optimizer", what, got, static_cast<float>(p0));
              continue;
            }
            const float reduced = hsdp != hsdp_all_reduce.end()
                                      ? hsdp_ref(u, p, row, c, s_.ops[hsdp->second])
                                      : reduce_scatter_ref(u, p, row, c, 0);
            const double grad = RoundTo(p.own_dtype, reduced);
            tally.Near("step/optimizer", what, got, AdamWStep(p0, grad, exec_, 1), p0, rel);
          }
        }
      }
    }
  }
  if (report->mismatches == 0) return Status::Ok();
  return CheckFailed(fmt::format(
      "run --check: rank {}: {} of {} elements differ from the plan's "
      "references; first:\n  {}",
      rank_, report->mismatches, report->elements, fmt::join(report->first_mismatches, "\n  ")));
}

}  // namespace shardscope::backend
