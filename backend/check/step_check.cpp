#include "backend/check/step_check.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

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
// The gradient of micro-step `first`; with `micro_steps` > 1 (gradient accumulation without
// sync) the sum the unsharded accumulator (reduce dtype) holds after micro-steps first, first
// + 1, ...: each one's deterministic values (backend/exec/executor.h) added one after another
// as FSDP2's `unsharded_accumulated_grad += grad` does (fp32 math, rounded to the reduce
// dtype each time).
float GradIn(int rank, const ParamLayout& p, int64_t row, int64_t col, DType reduce, int first = 0,
             int micro_steps = 1) {
  auto grad = [&](int micro) {
    return RoundTo(p.gather_dtype, GradValue(rank, p.fqn, row * p.cols + col, micro));
  };
  float acc = RoundTo(reduce, grad(first));
  for (int m = first + 1; m < first + micro_steps; ++m) {
    acc = RoundTo(reduce, RoundTo(DType::kFloat32, double{acc} + grad(m)));
  }
  return acc;
}

// torch.optim.AdamW (foreach) run `steps` times from zero moments with the same gradient
// every step, in double; the parameter rounded to its dtype and the moments to float32 after
// each step, as the device stores them.
struct AdamWState {
  double param = 0, exp_avg = 0, exp_avg_sq = 0;
};
AdamWState AdamWSteps(double p, double g, DType own, const ExecOptions& o, int steps) {
  const double lr = o.lr, b1 = o.beta1, b2 = o.beta2;
  double m = 0, v = 0;
  for (int t = 1; t <= steps; ++t) {
    p *= 1.0 - lr * o.weight_decay;
    m = static_cast<float>(m + (1.0 - b1) * (g - m));
    v = static_cast<float>(b2 * v + (1.0 - b2) * g * g);
    const double bc1 = 1.0 - std::pow(b1, t);
    const double bc2 = 1.0 - std::pow(b2, t);
    const double denom = std::sqrt(v) / std::sqrt(bc2) + o.eps;
    p = RoundTo(own, p - (lr / bc1) * m / denom);
  }
  return {p, m, v};
}

// The relative tolerance of a value of `dtype` after `steps` optimizer steps: the device's
// float32 arithmetic may round each step's result one last bit away from the double
// reference, and those differences add up; bfloat16 holds at most a rounding of its own.
double Tolerance(DType dtype, int steps) {
  if (dtype == DType::kFloat32) return 1e-6 * std::max(1, steps);
  return steps <= 1 ? 0x1p-8 : 0x1p-7;
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
      "tensors verified ({} elements){}{}",
      rank, all_gathers, reduce_scatters, all_reduces, optimizer_tensors, elements,
      steps > 1 ? fmt::format(" over {} steps", steps) : "",
      mismatches == 0 ? ": all as the plan promises"
                      : fmt::format(": {} elements differ", mismatches));
}

StepChecker::StepChecker(const Schedule& schedule, const Plan& plan, const ExecOptions& exec)
    : s_(schedule), plan_(plan), exec_(exec) {
  rank_ = s_.roles.empty() ? 0 : s_.roles[0].rank;
  for (const ScheduleOp& op : s_.ops) last_micro_ = std::max(last_micro_, op.micro_step);
  // The unit's shard index is this rank's position in its all-gather's group (as the executor
  // derives it), its persistent buffers matched by unit and size as the executor does.
  std::map<std::string, int> shard_index, reduction;
  std::map<std::string, int> hsdp, replicate_reduce;
  std::map<std::string, std::vector<int>> micros, replicate_micros;
  std::set<std::string> local;
  for (size_t i = 0; i < s_.ops.size(); ++i) {
    const ScheduleOp& op = s_.ops[i];
    const std::string label = OpUnitLabel(s_, op);
    if (op.group < 0) {
      // No peers (S == 1): the op whose end allocates the reduction's output casts into it.
      if (IsCollective(op.type)) continue;
      for (const MemoryEffect& e : EffectsOf(s_, op)) {
        if (e.when == MemoryEffect::When::kEnd && e.bytes > 0 &&
            e.category == MemCategory::kCommBuffers) {
          reduction.emplace(label, static_cast<int>(i));
          micros[label].push_back(op.micro_step);
          local.insert(label);
        }
      }
      continue;
    }
    const ProcessGroup& g = s_.groups[op.group];
    const int pos =
        static_cast<int>(std::find(g.ranks.begin(), g.ranks.end(), rank_) - g.ranks.begin());
    if (op.type == OpType::kAllGather && op.collective.output_buffer >= 0) {
      shard_index.emplace(label, pos);
    } else if (op.type == OpType::kReduceScatter && op.collective.output_buffer >= 0) {
      reduction.emplace(label, static_cast<int>(i));
      micros[label].push_back(op.micro_step);
    } else if (op.type == OpType::kAllReduce && op.collective.output_buffer >= 0) {
      // HSDP reduces the reduced shard (a comm buffer), replicate params their gradients.
      const bool shard =
          s_.buffers[op.collective.output_buffer].category == MemCategory::kCommBuffers;
      // The last replicate all-reduce lands (each micro-step's, with sync every micro-step).
      if (shard) {
        hsdp.emplace(label, static_cast<int>(i));
      } else {
        replicate_reduce.insert_or_assign(label, static_cast<int>(i));
        replicate_micros[label].push_back(op.micro_step);
      }
    }
  }
  scheduled_ = ScheduledUnits(plan_);
  for (const ScheduledUnit& su : scheduled_) {
    const std::string& label = su.label;
    UnitRef& r = units_[label];
    r.plan = &su.plan;
    const auto it = shard_index.find(label);
    r.layout = MakeUnitLayout(su.plan, it == shard_index.end() ? 0 : it->second, label);
    if (const auto rs = reduction.find(label); rs != reduction.end()) {
      r.reduction = rs->second;
      r.local_reduction = local.count(label) > 0;
      // Each reduction carries the micro-steps since the one before: one reduction in a step
      // of several micro-steps (the others accumulated), or one per pipeline pass (each
      // pass's micro-steps accumulated); 1 with sync every micro-step.
      const int micro = s_.ops[rs->second].micro_step;
      if (micro > 0) r.micro_steps = micro + 1;
      r.reduction_micros = micros[label];
    }
    if (const auto h = hsdp.find(label); h != hsdp.end()) r.hsdp_all_reduce = h->second;
    if (const auto a = replicate_reduce.find(label); a != replicate_reduce.end()) {
      r.replicate_all_reduce = a->second;
    }
    // Without peers the replicate params' gradients land with the unit's local reduction.
    r.replicate_micros = r.replicate_all_reduce >= 0 ? replicate_micros[label] : r.reduction_micros;
  }
  for (const Buffer& b : s_.buffers) {
    auto it = units_.find(b.unit);
    if (it == units_.end()) continue;
    UnitRef& r = it->second;
    // The moments (persistent, exp_avg first as the executor takes them) and the sharded
    // gradients the optimizer reads: landed on the device in the step, or, offloaded, the
    // persistent host buffer the D2H copy fills.
    if (b.category == MemCategory::kOptimizer && b.alloc_op < 0) {
      (r.exp_avg < 0 ? r.exp_avg : r.exp_avg_sq) = b.id;
    } else if (b.category == MemCategory::kShardedGrads &&
               (r.plan->offload ? b.host && b.alloc_op < 0 : !b.host && b.alloc_op >= 0)) {
      r.sharded_grads = b.id;
    }
  }
  for (const Buffer& b : s_.buffers) {
    if (b.alloc_op >= 0 || b.category != MemCategory::kShardedParams) continue;
    auto it = units_.find(b.unit);
    if (it == units_.end()) continue;
    UnitRef& r = it->second;
    // An offloaded unit's shard lives on the host (its step runs there); a device copy of it
    // is the H2D op's, never persistent.
    if (b.host != r.plan->offload) continue;
    if (r.shard < 0 && b.bytes == r.layout.sizes.shard_bytes) {
      r.shard = b.id;
    } else if (r.replicate < 0 && b.bytes == r.layout.sizes.replicate_bytes) {
      r.replicate = b.id;
    }
  }
}

const StepChecker::UnitRef* StepChecker::UnitOf(const ScheduleOp& op) const {
  const auto it = units_.find(OpUnitLabel(s_, op));
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
  const ScheduleOp& op = s_.ops[i];
  if (op.type == OpType::kOptimizer) {
    if (static_cast<int>(optimized_.size()) <= ctx.step) optimized_.resize(ctx.step + 1);
    for (const auto& [label, u] : units_) {
      for (int id : {u.shard, u.replicate, u.exp_avg, u.exp_avg_sq}) {
        if (id >= 0) SS_RETURN_IF_ERROR(Copy(ctx, op.lane, id, optimized_[ctx.step][id]));
      }
      // The gradients the step read (still live: the optimizer's end frees them).
      if (u.sharded_grads >= 0 && ctx.buffer(u.sharded_grads).data != nullptr) {
        SS_RETURN_IF_ERROR(
            Copy(ctx, op.lane, u.sharded_grads, optimized_[ctx.step][u.sharded_grads]));
      }
    }
    return Status::Ok();
  }
  const bool checked = op.type == OpType::kAllGather || op.type == OpType::kReduceScatter ||
                       op.type == OpType::kAllReduce;
  if (!checked || op.collective.output_buffer < 0 || UnitOf(op) == nullptr) {
    return Status::Ok();
  }
  Snapshot snap;
  snap.op = i;
  snap.step = ctx.step;
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

  // The shard group's reduction of a parameter element for the replica shifted by `offset`
  // world ranks: the reduce-scatter's rule over the group, or, without peers, the local cast.
  // `micro`: the micro-step of the reduction (-1: the unit's, whose result the optimizer
  // reads); with accumulation it carries the micro-steps up to it.
  auto shard_reduced = [&](const UnitRef& u, const ParamLayout& p, int64_t row, int64_t col,
                           int offset, int micro = -1) -> float {
    if (row >= p.rows) return 0.0f;
    if (micro < 0) micro = s_.ops[u.reduction].micro_step;
    const int first = micro - (u.micro_steps - 1);
    if (u.local_reduction)
      return GradIn(rank_ + offset, p, row, col, p.reduce_dtype, first, u.micro_steps);
    const ScheduleOp& rs = s_.ops[u.reduction];
    const ProcessGroup& g = s_.groups[rs.group];
    const ReductionRule rule(rs.collective, g.size());
    double sum = 0;
    for (int m : g.ranks) {
      sum += rule.Input(GradIn(m + offset, p, row, col, rs.collective.dtype, first, u.micro_steps));
    }
    return rule.Output(sum);
  };
  // With HSDP, the replicate group's reduction of the replicas' shard reductions.
  auto hsdp_reduced = [&](const UnitRef& u, const ParamLayout& p, int64_t row, int64_t col,
                          int micro = -1) -> float {
    const ScheduleOp& ar = s_.ops[u.hsdp_all_reduce];
    const ProcessGroup& g = s_.groups[ar.group];
    const ReductionRule rule(ar.collective, g.size());
    double sum = 0;
    for (int q : g.ranks) sum += rule.Input(shard_reduced(u, p, row, col, q - rank_, micro));
    return rule.Output(sum);
  };
  // A replicate parameter's gradient after its all-reduce (or, on one rank, as backward wrote
  // it), in the dtype its buffer holds.
  // With accumulation the gradient is the micro-steps' sum (in the accumulator's reduce
  // dtype), which their all-reduce reduces as it is (on one rank: held in their dtype).
  // Without accumulation, the gradient of micro-step `micro` (-1: the last one, whose
  // reduction lands).
  auto replicate_grad = [&](const UnitRef& u, int rank, const ParamLayout& p, int64_t row,
                            int64_t col, DType d, int micro) -> float {
    if (micro < 0) micro = last_micro_;
    if (u.micro_steps <= 1) return GradIn(rank, p, row, col, d, micro);
    const float sum =
        GradIn(rank, p, row, col, p.reduce_dtype, micro - (u.micro_steps - 1), u.micro_steps);
    // Their all-reduce reduces the sum as the accumulator holds it; without one they land
    // from their gradients' buffer.
    return RoundTo(d, u.replicate_all_reduce >= 0 ? sum : RoundTo(p.gather_dtype, sum));
  };
  // `held`: as the gradients' buffer keeps it (rounded to its dtype); else the reduction in
  // the reduce dtype, from which the gradient lands (cast once to the parameter's dtype).
  auto replicate_reduced = [&](const UnitRef& u, const ParamLayout& p, int64_t row, int64_t col,
                               int micro = -1, bool held = true) -> float {
    if (u.replicate_all_reduce < 0) {
      return replicate_grad(u, rank_, p, row, col, p.gather_dtype, micro);
    }
    const ScheduleOp& ar = s_.ops[u.replicate_all_reduce];
    const DType d = ar.collective.dtype;
    const ReductionRule rule(ar.collective, s_.groups[ar.group].size());
    const DType buffer = s_.buffers[ar.collective.output_buffer].dtype;
    const DType stored = held && Checkable(buffer) ? buffer : d;
    double sum = 0;
    for (int m : s_.groups[ar.group].ranks) {
      sum += rule.Input(replicate_grad(u, m, p, row, col, d, micro));
    }
    return RoundTo(stored, rule.Output(sum));
  };
  // The gradient the optimizer reads: the reduction landed in the parameter's dtype. With a
  // reduction every micro-step each one is added to the first (fp32 math, FSDP2's
  // `sharded_param.grad += new_sharded_grad`), an offloaded unit's on the host and the
  // replicate params' alike.
  auto landed = [&](const UnitRef& u, const ParamLayout& p, int64_t row, int64_t col,
                    bool replicate) -> float {
    auto reduced = [&](int micro) {
      if (replicate) return replicate_reduced(u, p, row, col, micro, /*held=*/false);
      return u.hsdp_all_reduce >= 0 ? hsdp_reduced(u, p, row, col, micro)
                                    : shard_reduced(u, p, row, col, 0, micro);
    };
    const std::vector<int>& micros = replicate ? u.replicate_micros : u.reduction_micros;
    if (micros.size() <= 1) return RoundTo(p.own_dtype, reduced(-1));
    float acc = RoundTo(p.own_dtype, reduced(micros[0]));
    for (size_t k = 1; k < micros.size(); ++k) {
      acc = RoundTo(p.own_dtype, RoundTo(DType::kFloat32, double{acc} + reduced(micros[k])));
    }
    return acc;
  };
  // The parameter element and its moments after `steps` optimizer steps.
  auto state_after = [&](const UnitRef& u, const ParamLayout& p, int64_t row, int64_t col,
                         bool replicate, int steps) -> AdamWState {
    const double p0 = RoundTo(p.own_dtype, ParamValue(p.fqn, row * p.cols + col));
    if (steps == 0 || !p.requires_grad) return {p0, 0, 0};
    if (!replicate && u.reduction < 0) return {p0, 0, 0};  // no reduced gradient: not stepped
    return AdamWSteps(p0, landed(u, p, row, col, replicate), p.own_dtype, exec_, steps);
  };
  auto param_after = [&](const UnitRef& u, const ParamLayout& p, int64_t row, int64_t col,
                         bool replicate, int steps) -> double {
    return state_after(u, p, row, col, replicate, steps).param;
  };

  for (const Snapshot& snap : collectives_) {
    const ScheduleOp& op = s_.ops[snap.op];
    const std::string op_id = OpIdOf(s_, op);  // formed once: every element names it
    const UnitRef& u = *UnitOf(op);
    const UnitLayout& L = u.layout;
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
              const std::string what = Where(p, row, c, "gathered", slot);
              const float got = Load(p.gather_dtype, base, r * p.cols + c);
              if (row >= p.rows) {
                tally.Compare(op_id, what, got, 0.0f);
              } else if (snap.step == 0) {
                tally.Compare(op_id, what, got, ParamIn(p, row, c, p.gather_dtype));
              } else {
                const double want =
                    RoundTo(p.gather_dtype, param_after(u, p, row, c, false, snap.step));
                // One rounding more than the parameter: the cast to the gather dtype.
                tally.Near(op_id, what, got, want, want, Tolerance(p.gather_dtype, snap.step + 1));
              }
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
                const float want = row < p.rows
                                       ? GradIn(rank_, p, row, c, d,
                                                op.micro_step - (u.micro_steps - 1), u.micro_steps)
                                       : 0.0f;
                tally.Compare(op_id, Where(p, row, c, "reduce-scatter input", block),
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
            tally.Compare(op_id, Where(p, row, c, "reduced", -1), Load(d, base, r * p.cols + c),
                          shard_reduced(u, p, row, c, 0, op.micro_step));
          }
        }
      }
    } else if (op.type == OpType::kAllReduce) {
      ++report->all_reduces;
      const DType d = op.collective.dtype;
      if (!Checkable(d)) continue;
      if (snap.op == u.hsdp_all_reduce) {
        if (u.reduction < 0) continue;
        for (const ParamLayout& p : L.params) {
          if (!p.requires_grad || p.reduce_offset < 0) continue;
          const char* base = snap.output.data() + p.reduce_offset;
          for (int64_t r = 0; r < p.shard_rows; ++r) {
            const int64_t row = p.first_row + r;
            for (int64_t c = 0; c < p.cols; ++c) {
              tally.Compare(op_id, Where(p, row, c, "replica-reduced", -1),
                            Load(d, base, r * p.cols + c),
                            hsdp_reduced(u, p, row, c, op.micro_step));
            }
          }
        }
      } else if (snap.op == u.replicate_all_reduce) {
        // Replicate params: whole gradients over the data-parallel group, reduced in the
        // reduce dtype; the buffer keeps the gradients' dtype (cast in and back out when the
        // two differ, the cast copy having no buffer of its own).
        const DType held = s_.buffers[op.collective.output_buffer].dtype;
        const DType stored = Checkable(held) ? held : d;
        for (const ParamLayout& p : L.replicate) {
          if (!p.requires_grad) continue;
          const int64_t first = p.grad_offset / DTypeBytes(p.gather_dtype);
          for (int64_t row = 0; row < p.rows; ++row) {
            for (int64_t c = 0; c < p.cols; ++c) {
              tally.Compare(op_id, Where(p, row, c, "all-reduced", -1),
                            Load(stored, snap.output.data(), first + row * p.cols + c),
                            replicate_reduced(u, p, row, c, op.micro_step));
            }
          }
        }
      }
    }
  }

  // The optimizer, every step: every shard and replicate tensor after step k + 1 of AdamW.
  report->steps = static_cast<int>(optimized_.size());
  for (size_t step = 0; step < optimized_.size(); ++step) {
    const int steps = static_cast<int>(step) + 1;
    const std::string op_id =
        optimized_.size() > 1 ? fmt::format("step/optimizer (step {})", steps) : "step/optimizer";
    const std::map<int, std::vector<char>>& saved = optimized_[step];
    auto bytes_of = [&](int buffer) -> const char* {
      const auto it = saved.find(buffer);
      return it == saved.end() ? nullptr : it->second.data();
    };
    for (const auto& [label, u] : units_) {
      // The optimizer's input and state, laid out as the executor steps them: the gradients
      // one tensor after another (the shard's, then the replicate params'), the moments at
      // each parameter's optim_offset (float32).
      const char* grads = bytes_of(u.sharded_grads);
      const char* exp_avg = bytes_of(u.exp_avg);
      const char* exp_avg_sq = bytes_of(u.exp_avg_sq);
      int64_t grad_at = 0;
      auto verify = [&](int buffer, const std::vector<ParamLayout>& params, bool replicate) {
        const char* updated = bytes_of(buffer);
        if (updated == nullptr) return;
        const char* part = replicate ? "replicate parameter" : "parameter";
        for (const ParamLayout& p : params) {
          const int64_t rows = replicate ? p.rows : p.shard_rows;
          const char* grad = grads != nullptr ? grads + grad_at : nullptr;
          if (p.requires_grad) grad_at += rows * p.cols * DTypeBytes(p.own_dtype);
          if (!Checkable(p.own_dtype)) continue;
          ++report->optimizer_tensors;
          const double rel = Tolerance(p.own_dtype, steps);
          const char* base = updated + p.shard_offset;
          const bool stepped = p.requires_grad && (replicate || u.reduction >= 0);
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t row = p.first_row + r;
            const bool padding = r >= p.valid_rows;
            for (int64_t c = 0; c < p.cols; ++c) {
              const int64_t e = r * p.cols + c;
              const float got = Load(p.own_dtype, base, e);
              const std::string what =
                  Where(p, row, c, fmt::format("updated {}", part).c_str(), -1);
              if (padding) {
                tally.Compare(op_id, what, got, 0.0f);
              } else {
                const double before = param_after(u, p, row, c, replicate, steps - 1);
                tally.Near(op_id, what, got, param_after(u, p, row, c, replicate, steps), before,
                           rel);
              }
              if (!stepped) continue;
              // AdamW's update hardly depends on the gradient's scale (m / sqrt(v), eps
              // 1e-8), so the gradient it read and the moments it kept are compared on their
              // own magnitudes: a wrong scaling factor shows there.
              if (grad != nullptr) {
                const float want = padding ? 0.0f : landed(u, p, row, c, replicate);
                tally.Compare(op_id,
                              Where(p, row, c, fmt::format("gradient of {}", part).c_str(), -1),
                              Load(p.own_dtype, grad, e), want);
              }
              const AdamWState want =
                  padding ? AdamWState{} : state_after(u, p, row, c, replicate, steps);
              if (exp_avg != nullptr) {
                tally.Near(op_id, Where(p, row, c, fmt::format("exp_avg of {}", part).c_str(), -1),
                           Load(DType::kFloat32, exp_avg, p.optim_offset + e), want.exp_avg,
                           want.exp_avg, rel);
              }
              if (exp_avg_sq != nullptr) {
                tally.Near(op_id,
                           Where(p, row, c, fmt::format("exp_avg_sq of {}", part).c_str(), -1),
                           Load(DType::kFloat32, exp_avg_sq, p.optim_offset + e), want.exp_avg_sq,
                           want.exp_avg_sq, rel);
              }
            }
          }
        }
      };
      verify(u.shard, u.layout.params, false);
      // An offloaded unit's replicate params stay on the device, outside the host step.
      if (!u.plan->offload) verify(u.replicate, u.layout.replicate, true);
    }
  }
  if (report->mismatches == 0) return Status::Ok();
  return CheckFailed(fmt::format(
      "run --check: rank {}: {} of {} elements differ from the plan's "
      "references; first:\n  {}",
      rank_, report->mismatches, report->elements, fmt::join(report->first_mismatches, "\n  ")));
}

}  // namespace shardscope::backend
