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

// Megatron's interleaved schedule: virtual micro-step j runs local chunk (j / pp) mod v of
// micro-batch (j / (pp·v))·pp + j mod pp; backward visits the chunks in reverse. Warm-up is
// (pp − s − 1)·2 + (v − 1)·pp forwards.
std::vector<PipeAction> Interleaved(int pp, int v, int s, int m) {
  const int total = m * v;
  auto micro_of = [&](int j) { return (j / (pp * v)) * pp + j % pp; };
  auto fwd = [&](int j) { return F(((j / pp) % v) * pp + s, micro_of(j)); };
  auto bwd = [&](int j) { return B((v - 1 - (j / pp) % v) * pp + s, micro_of(j)); };
  const int warmup = std::min((pp - s - 1) * 2 + (v - 1) * pp, total);
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
    if (micro_batches % pp != 0) {
      return InvalidInput(fmt::format(
          "parallelism.pp_microbatches: the interleaved 1F1B schedule needs a multiple of pp = "
          "{} micro-batches, got {}",
          pp, micro_batches));
    }
    for (int s = 0; s < pp; ++s) order[s] = Interleaved(pp, virtual_stages, s, micro_batches);
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

}  // namespace shardscope
