#include "viewer/memory_fill.h"

#include <algorithm>

namespace shardscope::viewer {
namespace {

// llvmpipe's tile width: a chunk's shared rectangle covers whole tiles where it can.
constexpr float kMemoryChunkPx = 64.0f;

// Columns side by side showing the same sample, and where its layers meet on screen: edge[0]
// is the band's bottom, edge[k + 1] the top of category k, the last edge the band's top; layer
// k (category k, then the band) spans [edge[k + 1], edge[k]).
struct MemoryRun {
  float x0 = 0, x1 = 0;
  std::vector<float> edge;
};

std::vector<MemoryRun> Runs(const MemoryModel& m, const std::vector<MemoryColumn>& cols, float x0,
                            float x1, float y0, float y1, double px_per_byte) {
  std::vector<MemoryRun> runs;
  const int columns = static_cast<int>(cols.size());
  const size_t layers = m.categories.size() + 1;
  for (int c = 0, e = 0; c < columns; c = e) {
    const int64_t sample = cols[c].sample;
    for (e = c + 1; e < columns && cols[e].sample == sample;) ++e;
    MemoryRun run;
    run.x0 = x0 + c;
    run.x1 = e == columns ? x1 : x0 + e;  // the last run takes the sub-pixel rest
    run.edge.assign(layers + 1, y1);
    float y = y1;
    for (size_t k = 0; k + 1 < layers; ++k) {
      const int64_t val = sample >= 0 ? m.value(static_cast<size_t>(sample), k) : 0;
      if (val > 0) y = std::max(y0, y - static_cast<float>(val * px_per_byte));
      run.edge[k + 1] = y;
    }
    run.edge[layers] = y0;
    runs.push_back(std::move(run));
  }
  return runs;
}

void Emit(float x0, float x1, float top, float bottom, int layer,
          std::vector<MemoryFillRect>* out) {
  if (top < bottom && x0 < x1) out->push_back({x0, top, x1, bottom, layer});
}

}  // namespace

std::vector<MemoryFillRect> MemoryFill(const MemoryModel& m, const std::vector<MemoryColumn>& cols,
                                       float x0, float x1, float y0, float y1, double px_per_byte) {
  const std::vector<MemoryRun> runs = Runs(m, cols, x0, x1, y0, y1, px_per_byte);
  const size_t layers = m.categories.size() + 1;
  std::vector<MemoryFillRect> out;
  for (size_t a = 0, b = 0; a < runs.size(); a = b) {
    for (b = a + 1; b < runs.size() && runs[b].x1 - runs[a].x0 <= kMemoryChunkPx;) ++b;
    for (size_t k = 0; k < layers; ++k) {
      const int layer = k + 1 == layers ? kMemoryBandLayer : static_cast<int>(k);
      // What every run of the chunk has of this layer: one rectangle across the chunk.
      float top = y0, bottom = y1;
      for (size_t r = a; r < b; ++r) {
        top = std::max(top, runs[r].edge[k + 1]);
        bottom = std::min(bottom, runs[r].edge[k]);
      }
      const bool shared = b - a > 1 && top < bottom;
      if (shared) Emit(runs[a].x0, runs[b - 1].x1, top, bottom, layer, &out);
      for (size_t r = a; r < b; ++r) {
        const MemoryRun& run = runs[r];
        if (shared) {
          Emit(run.x0, run.x1, run.edge[k + 1], top, layer, &out);
          Emit(run.x0, run.x1, bottom, run.edge[k], layer, &out);
        } else {
          Emit(run.x0, run.x1, run.edge[k + 1], run.edge[k], layer, &out);
        }
      }
    }
  }
  return out;
}

}  // namespace shardscope::viewer
