// Level 1: what the plots hand the renderer for their opaque fills, without a renderer: the
// memory band's rectangles (memory_fill.h) cover every pixel once with the layer the column's
// stack puts there, and the timeline's boxes and idle stretches lie in a flat section
// (flat_fill.h) of its draw list, between the flat-fill callback and the backend's reset.
#include <gtest/gtest.h>
#include <imgui.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/viewer/headless_frame.h"
#include "tests/viewer/viewer_test_util.h"
#include "viewer/flat_fill.h"
#include "viewer/memory_fill.h"
#include "viewer/panels.h"
#include "viewer/viewer_state.h"

namespace shardscope::viewer {
namespace {

// Two categories changing every 10 ns for 4000 ns, a sawtooth over a slow ramp: at 300
// columns nearly every column shows another sample (full zoom-out of a long trace).
MemoryModel Sawtooth() {
  Trace t;
  t.AddMarker(0, 0, "step_begin");
  for (int i = 0; i < 400; ++i) {
    t.AddCounter(0, i * 10, "params_bytes", 1000 + i * 2);
    t.AddCounter(0, i * 10, "activations_bytes", i % 2 == 0 ? 300 : 150 + i % 7);
  }
  return BuildMemoryModel(t, 0);
}

// The layer the old per-column drawing put at (column, screen y): the stack from the bottom.
int ExpectedLayer(const MemoryModel& m, const MemoryColumn& col, float y, float y0, float y1,
                  double px_per_byte) {
  float bottom = y1;
  for (size_t k = 0; col.sample >= 0 && k < m.categories.size(); ++k) {
    const int64_t val = m.value(static_cast<size_t>(col.sample), k);
    if (val <= 0) continue;
    const float top = std::max(y0, bottom - static_cast<float>(val * px_per_byte));
    if (y >= top && y < bottom) return static_cast<int>(k);
    bottom = top;
  }
  return kMemoryBandLayer;
}

TEST(MemoryFillTest, CoversEachPixelOnceWithTheLayerOfItsColumnsStack) {
  const MemoryModel m = Sawtooth();
  ASSERT_EQ(m.categories.size(), 2u);
  const int columns = 300;
  const float x0 = 150, x1 = x0 + columns + 0.4f, y0 = 40, y1 = 240;
  const double px_per_byte = (y1 - y0) / 2400.0;
  const std::vector<MemoryColumn> cols = DownsampleMemory(m, 0, 4000, columns);
  const std::vector<MemoryFillRect> rects = MemoryFill(m, cols, x0, x1, y0, y1, px_per_byte);
  int wrong = 0, uncovered = 0, twice = 0;
  for (int c = 0; c < columns; ++c) {
    const float x = x0 + c + 0.5f;
    for (float y = y0 + 0.5f; y < y1; y += 1.0f) {
      int hits = 0, layer = -2;
      for (const MemoryFillRect& r : rects) {
        if (x >= r.x0 && x < r.x1 && y >= r.y0 && y < r.y1) {
          ++hits;
          layer = r.layer;
        }
      }
      uncovered += hits == 0;
      twice += hits > 1;
      if (hits == 1 && layer != ExpectedLayer(m, cols[c], y, y0, y1, px_per_byte)) ++wrong;
    }
  }
  EXPECT_EQ(uncovered, 0);
  EXPECT_EQ(twice, 0);
  EXPECT_EQ(wrong, 0);
  // The sub-pixel rest past the last column belongs to the last run.
  float right = 0;
  for (const MemoryFillRect& r : rects) right = std::max(right, r.x1);
  EXPECT_FLOAT_EQ(right, x1);
  // What a software renderer pays for: most of the band in rectangles wider than a column.
  double thin_px = 0, all_px = 0;
  for (const MemoryFillRect& r : rects) {
    const double px = (r.x1 - r.x0) * (r.y1 - r.y0);
    all_px += px;
    if (r.x1 - r.x0 <= 1.5f) thin_px += px;
  }
  EXPECT_NEAR(all_px, (x1 - x0) * (y1 - y0), 1.0);
  EXPECT_LT(thin_px, 0.4 * all_px);  // one rectangle per run of columns: all of it
}

class FlatSectionTest : public testing::HeadlessFrameTest {
 protected:
  const ImDrawList* List(const std::string& prefix) const {
    const ImDrawData* d = ImGui::GetDrawData();
    for (int i = 0; i < d->CmdListsCount; ++i) {
      if (std::string(d->CmdLists[i]->_OwnerName).starts_with(prefix)) return d->CmdLists[i];
    }
    return nullptr;
  }
  // Indices drawn inside flat sections, and how many sections open and close.
  struct Sections {
    unsigned flat_indices = 0;
    int opened = 0, closed = 0;
  };
  static Sections Count(const ImDrawList& l) {
    Sections out;
    bool flat = false;
    for (const ImDrawCmd& c : l.CmdBuffer) {
      if (c.UserCallback == FlatFillCallback) {
        EXPECT_FALSE(flat) << "a flat section opened inside another";
        flat = true;
        ++out.opened;
      } else if (c.UserCallback == ImDrawCallback_ResetRenderState) {
        if (flat) ++out.closed;
        flat = false;
      } else if (flat) {
        out.flat_indices += c.ElemCount;
      }
    }
    EXPECT_FALSE(flat) << "a flat section left open";
    return out;
  }
};

TEST_F(FlatSectionTest, TimelineBoxesAndIdleAreOneFlatSection) {
  Frame();
  Frame();
  const ImDrawList* rows = List("Timeline/timeline_rows");
  ASSERT_NE(rows, nullptr);
  const Sections sec = Count(*rows);
  EXPECT_EQ(sec.opened, 1);
  EXPECT_EQ(sec.closed, 1);
  // Six indices (two triangles) per box and per background stretch of every row and trace.
  const TimelineDrawCache& c = s.timeline_cache;
  unsigned rects = 0;
  for (int w = 0; w < 2; ++w) {
    for (size_t r = 0; r < c.rows.size(); ++r) {
      rects += c.boxes[w][r].size() + c.background[w][r].size();
    }
  }
  ASSERT_GT(rects, 0u);
  EXPECT_EQ(sec.flat_indices, 6 * rects);
}

TEST_F(FlatSectionTest, MemoryBandIsAFlatSectionAndItsLinesAreNot) {
  Frame();
  Frame();
  const ImDrawList* memory = List("Memory");
  ASSERT_NE(memory, nullptr);
  const Sections sec = Count(*memory);
  EXPECT_EQ(sec.opened, 1);  // B has no memory counter: one band
  EXPECT_EQ(sec.closed, 1);
  unsigned all = 0;
  for (const ImDrawCmd& cmd : memory->CmdBuffer) all += cmd.UserCallback ? 0 : cmd.ElemCount;
  EXPECT_GT(sec.flat_indices, 0u);
  EXPECT_LT(sec.flat_indices, all) << "the lines, labels and marker are blended, after it";
}

}  // namespace
}  // namespace shardscope::viewer
