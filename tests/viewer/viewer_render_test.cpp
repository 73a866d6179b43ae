// Level 2 (under xvfb-run, Mesa's software OpenGL): headless screenshots of the golden pair,
// the prediction of tests/viewer/golden/h200_sac_b2.json beside the H200 trace it predicts
// (bench/device/results/trace_sac_b2.json.gz), checked at places the panels report: lanes
// where they should be in their kind's colour, the memory peak marker, a delta cell's colour.
#include <gtest/gtest.h>
#include <stb/stb_image.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "viewer/app.h"
#include "viewer/panels.h"

namespace shardscope::viewer {
namespace {

const std::string kSource = SHARDSCOPE_SOURCE_DIR;

struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> rgba;
  ImVec4 At(float x, float y) const {
    const int xi = static_cast<int>(x), yi = static_cast<int>(y);
    const uint8_t* p = &rgba[(static_cast<size_t>(yi) * w + xi) * 4];
    return ImVec4(p[0], p[1], p[2], p[3]);
  }
};

Image Load(const std::string& path) {
  Image img;
  int n = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &n, 4);
  if (data) {
    img.rgba.assign(data, data + static_cast<size_t>(img.w) * img.h * 4);
    stbi_image_free(data);
  }
  return img;
}

bool Near(const ImVec4& px, ImU32 color, float tol) {
  const ImVec4 c = ImGui::ColorConvertU32ToFloat4(color);
  return std::abs(px.x - c.x * 255) <= tol && std::abs(px.y - c.y * 255) <= tol &&
         std::abs(px.z - c.z * 255) <= tol;
}

// Pixels along the middle of `r` that have `color`.
int CountAlong(const Image& img, const Rect& r, ImU32 color) {
  int n = 0;
  const float y = (r.y0 + r.y1) / 2;
  for (float x = r.x0; x < r.x1 && x < img.w; x += 1) n += Near(img.At(x, y), color, 12) ? 1 : 0;
  return n;
}

class RenderTest : public ::testing::Test {
 protected:
  void Render(bool overlay) {
    path = (std::filesystem::temp_directory_path() /
            ("viewer_render_" + std::to_string(getpid()) + (overlay ? "_o" : "") + ".png"))
               .string();
    ViewerOptions o;
    o.scenario = kSource + "/tests/viewer/golden/h200_sac_b2.json";
    o.traces = {kSource + "/bench/device/results/trace_sac_b2.json.gz"};
    o.screenshot = path;
    o.frames = 3;
    o.width = 1400;
    o.height = 900;
    o.overlay = overlay;
    const Status st = RunViewer(o, &probes);
    ASSERT_TRUE(st.ok()) << st.message();
    img = Load(path);
    ASSERT_EQ(img.w, 1400);
    ASSERT_EQ(img.h, 900);
  }
  void TearDown() override { std::filesystem::remove(path); }
  std::string path;
  Probes probes;
  Image img;
};

TEST_F(RenderTest, LanesPeakAndDeltaCellAreWhereThePanelsSay) {
  Render(false);
  // Compute lanes of both traces: mostly compute-coloured (the step is compute-bound).
  int checked = 0;
  for (int w = 0; w < 2; ++w) {
    for (size_t i = 0; i < probes.lane_rects[w].size(); ++i) {
      if (probes.lane_row_lane[w][i] != kLaneCompute) continue;
      const Rect& r = probes.lane_rects[w][i];
      const int width = static_cast<int>(r.x1 - r.x0);
      EXPECT_GT(CountAlong(img, r, KindColor(ItemKind::kCompute)) +
                    CountAlong(img, r, KindColor(ItemKind::kCompute, true)),
                width / 2)
          << "trace " << w << " compute lane at y " << r.y0;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
  // The prediction (A) is above the measurement (B) in the compute row.
  EXPECT_LT(probes.lane_rects[0][0].y0, probes.lane_rects[1][0].y0);
  // The prediction's all_gather lane (one GPU: FSDP's copy-in/out only) has no compute colour.
  for (size_t i = 0; i < probes.lane_rects[0].size(); ++i) {
    if (probes.lane_row_lane[0][i] == kLaneCompute) continue;
    EXPECT_EQ(CountAlong(img, probes.lane_rects[0][i], KindColor(ItemKind::kCompute)), 0);
  }
  // The memory peak marker (a triangle above the peak) of the prediction.
  ASSERT_GE(probes.peak_marker_x[0], 0);
  EXPECT_TRUE(Near(img.At(probes.peak_marker_x[0], probes.peak_marker_y[0]),
                   IM_COL32(255, 60, 200, 255), 20));
  // The top row's delta cell: red when the measurement took longer, green when shorter.
  ASSERT_TRUE(probes.first_delta_cell.valid());
  const ImVec4 cell = img.At(probes.first_delta_cell.x1 - 2,
                             (probes.first_delta_cell.y0 + probes.first_delta_cell.y1) / 2);
  if (probes.first_delta_ns > 0) {
    EXPECT_GT(cell.x, cell.y + 40) << "red cell expected";
  } else {
    EXPECT_GT(cell.y, cell.x + 40) << "green cell expected";
  }
}

TEST_F(RenderTest, OverlaidLanesShareOneBand) {
  Render(true);
  ASSERT_FALSE(probes.lane_rects[1].empty());
  const Rect& a = probes.lane_rects[0][0];
  const Rect& b = probes.lane_rects[1][0];
  EXPECT_GT(b.y0, a.y0);
  EXPECT_LE(b.y1, a.y1 + 1);
  EXPECT_GT(CountAlong(img, b, KindColor(ItemKind::kCompute)), 0);
}

}  // namespace
}  // namespace shardscope::viewer
