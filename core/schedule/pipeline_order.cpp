#include "core/schedule/pipeline_order.h"

#include <fmt/core.h>

#include <algorithm>

namespace shardscope {
namespace {

PipeAction F(int chunk, int micro) { return PipeAction{true, chunk, micro}; }
PipeAction B(int chunk, int micro) { return PipeAction{false, chunk, micro}; }

// 1F1B: stage s warms up with pp − s − 1 forwards (the deeper the stage, the fewer), then
// alternates one forward and one backward, then drains the remaining backwards.
std::vector<PipeAction> OneFOneB(int pp, int s, int m) {
  std::vector<PipeAction> out;
  const int warmup = std::min(pp - s - 1, m);
  for (int i = 0; i < warmup; ++i) out.push_back(F(s, i));
  for (int i = warmup; i < m; ++i) {
    out.push_back(F(s, i));
    out.push_back(B(s, i - warmup));
  }
  for (int i = m - warmup; i < m; ++i) out.push_back(B(s, i));
  return out;
}

// The interleaved schedule of torch.distributed.pipelining's ScheduleInterleaved1F1B: the
// micro-batches go in rounds of r (`microbatches_per_round`); virtual micro-step j runs local
// chunk (j / r) mod v of micro-batch (j / (r·v))·r + j mod r, and backward visits the chunks in
// reverse. Warm-up is (pp − s − 1)·2 + (v − 1)·r forwards. With r = pp (M a multiple of pp) it
// is Megatron's interleaved order; tests/schedule/pipeline_orders_torch.json holds PyTorch's
// own orders for other counts.
std::vector<PipeAction> Interleaved(int pp, int v, int s, int m, int r) {
  const int total = m * v;
  auto micro_of = [&](int j) { return (j / (r * v)) * r + j % r; };
  auto fwd = [&](int j) { return F(((j / r) % v) * pp + s, micro_of(j)); };
  auto bwd = [&](int j) { return B((v - 1 - (j / r) % v) * pp + s, micro_of(j)); };
  const int warmup = std::min((pp - s - 1) * 2 + (v - 1) * r, total);
  std::vector<PipeAction> out;
  for (int j = 0; j < warmup; ++j) out.push_back(fwd(j));
  for (int j = 0; j < total - warmup; ++j) {
    out.push_back(fwd(warmup + j));
    out.push_back(bwd(j));
  }
  for (int j = total - warmup; j < total; ++j) out.push_back(bwd(j));
  return out;
}

}  // namespace

Result<std::vector<std::vector<PipeAction>>> PipelineOrder(const std::string& schedule, int pp,
                                                           int virtual_stages, int micro_batches) {
  if (pp < 1 || virtual_stages < 1 || micro_batches < 1) {
    return InvalidInput(fmt::format(
        "pipeline: pp = {}, pp_virtual_stages = {} and micro-batches = {} must all be >= 1", pp,
        virtual_stages, micro_batches));
  }
  std::vector<std::vector<PipeAction>> order(pp);
  if (pp == 1 && virtual_stages == 1) {
    for (int m = 0; m < micro_batches; ++m) {
      order[0].push_back(F(0, m));
      order[0].push_back(B(0, m));
    }
    return order;
  }
  if (schedule == "interleaved_1f1b") {
    // PyTorch's rule: M / pp rounds (at least one), each of M / rounds micro-batches.
    const int rounds = std::max(1, micro_batches / pp);
    if (micro_batches % rounds != 0) {
      auto fits = [pp](int m) { return m % std::max(1, m / pp) == 0; };
      int below = micro_batches - 1, above = micro_batches + 1;
      while (!fits(below)) --below;
      while (!fits(above)) ++above;
      return InvalidInput(fmt::format(
          "parallelism.pp_microbatches = {}: the interleaved 1F1B schedule runs the "
          "micro-batches in {} rounds (pp_microbatches / pp, rounded down), and {} is not a "
          "multiple of {} (PyTorch's ScheduleInterleaved1F1B raises; {} or {} would do)",
          micro_batches, rounds, micro_batches, rounds, below, above));
    }
    for (int s = 0; s < pp; ++s) {
      order[s] = Interleaved(pp, virtual_stages, s, micro_batches, micro_batches / rounds);
    }
    return order;
  }
  if (virtual_stages != 1) {
    return InvalidInput(fmt::format(
        "parallelism.pp_virtual_stages = {}: only the interleaved_1f1b schedule runs several "
        "chunks per stage (pp_schedule is '{}')",
        virtual_stages, schedule));
  }
  if (schedule == "1f1b") {
    for (int s = 0; s < pp; ++s) order[s] = OneFOneB(pp, s, micro_batches);
    return order;
  }
  if (schedule == "gpipe") {
    for (int s = 0; s < pp; ++s) {
      for (int m = 0; m < micro_batches; ++m) order[s].push_back(F(s, m));
      for (int m = 0; m < micro_batches; ++m) order[s].push_back(B(s, m));
    }
    return order;
  }
  return InvalidInput(fmt::format(
      "parallelism.pp_schedule = '{}': expected 1f1b, interleaved_1f1b or gpipe", schedule));
}

Result<std::vector<std::vector<PipeAction>>> RepeatedPipelineOrder(const std::string& schedule,
                                                                   int pp, int virtual_stages,
                                                                   int micro_batches, int passes) {
  if (passes < 1) {
    return InvalidInput(fmt::format("pipeline: {} passes: expected >= 1", passes));
  }
  SS_ASSIGN_OR_RETURN(auto one, PipelineOrder(schedule, pp, virtual_stages, micro_batches));
  if (passes == 1) return one;
  std::vector<std::vector<PipeAction>> order(one.size());
  for (size_t s = 0; s < one.size(); ++s) {
    order[s].reserve(one[s].size() * static_cast<size_t>(passes));
    for (int p = 0; p < passes; ++p) {
      for (PipeAction a : one[s]) {
        a.micro += p * micro_batches;
        order[s].push_back(a);
      }
    }
  }
  return order;
}

}  // namespace shardscope
