// Level 2 (under xvfb-run, Mesa's software OpenGL): headless screenshots of the golden pair,
// the prediction of tests/viewer/golden/h200_sac_b2.json beside the H200 trace it predicts
// (bench/device/results/trace_sac_b2.json.gz), checked at places the panels report: lanes
// where they should be in their kind's colour, the memory peak marker, a delta cell's colour.
#include <GL/gl.h>
#include <gtest/gtest.h>
#include <stb/stb_image.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "viewer/app.h"
#include "viewer/flat_fill.h"
#include "viewer/panels.h"
#include "viewer/retained_frame.h"

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

// The golden pair drawn frame by frame in one window: the retained frame (nothing changed, so
// no window drawn again) against every window drawn, and the plots' opaque fills through the
// flat-fill program against ImGui's shader, pixel for pixel; a box of the flat pass has its
// kind's exact colour at its centre.
class FramePathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ViewerOptions o;
    o.scenario = kSource + "/tests/viewer/golden/h200_sac_b2.json";
    o.traces = {kSource + "/bench/device/results/trace_sac_b2.json.gz"};
    ASSERT_TRUE(LoadViewerState(o, &state).ok());
    state.headless = true;
    Result<std::unique_ptr<GlWindow>> w = OpenGlWindow(1000, 700, false);
    ASSERT_TRUE(w.ok()) << w.status().message();
    gl = std::move(*w);
    state.tuner->WaitIdle(std::chrono::seconds(60));
  }
  void TearDown() override {
    SetFlatFillEnabled(true);
    gl.reset();
    for (const std::string& p : paths) std::filesystem::remove(p);
  }
  // Draws a frame and reads back what it left in the back buffer.
  Image Frame(RenderTimes* times = nullptr) {
    RenderTimes t;
    RenderFrame(*gl, &state, &t);
    if (times) *times = t;
    const std::string path =
        (std::filesystem::temp_directory_path() /
         ("viewer_path_" + std::to_string(getpid()) + "_" + std::to_string(paths.size()) + ".png"))
            .string();
    paths.push_back(path);
    EXPECT_TRUE(SaveScreenshot(*gl, path).ok());
    PresentFrame(*gl);
    return Load(path);
  }
  ViewerState state;
  std::unique_ptr<GlWindow> gl;
  std::vector<std::string> paths;
};

int Differing(const Image& a, const Image& b) {
  if (a.w != b.w || a.h != b.h) return -1;
  int n = 0;
  for (size_t i = 0; i < a.rgba.size(); i += 4) {
    n += a.rgba[i] != b.rgba[i] || a.rgba[i + 1] != b.rgba[i + 1] || a.rgba[i + 2] != b.rgba[i + 2];
  }
  return n;
}

TEST_F(FramePathTest, RetainedAndFlatFramesAreTheWholeRedrawsPicture) {
  // Under Xvfb Mesa's llvmpipe presents by a copy: the probe finds the back buffer kept, so the
  // retained path is what this test compares (a GPU's context never retains).
  const std::string_view renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  if (renderer.starts_with("llvmpipe")) {
    EXPECT_TRUE(RetainsFrames(*gl)) << renderer;
  }
  for (int f = 0; f < 3; ++f) Frame();  // the layout settles
  RenderTimes times;
  const Image retained = Frame(&times);
  ASSERT_EQ(retained.w, 1000);
  if (RetainsFrames(*gl)) {
    EXPECT_EQ(times.drawn_windows, 0) << "nothing changed";
  }
  EXPECT_EQ(times.windows, 5);
  SetRetainFrame(*gl, false);
  const Image whole = Frame(&times);
  EXPECT_EQ(times.drawn_windows, 5);
  EXPECT_EQ(Differing(retained, whole), 0);
  SetFlatFillEnabled(false);
  const Image imgui_shader = Frame();
  EXPECT_EQ(Differing(whole, imgui_shader), 0);

  // Zoomed in, the timeline and memory windows change; the others keep their pixels.
  SetFlatFillEnabled(true);
  SetRetainFrame(*gl, true);
  Frame();
  state.viewport.ZoomAt(state.viewport.width_px / 3, 0.25);
  const Image zoomed = Frame(&times);
  if (RetainsFrames(*gl)) {
    EXPECT_EQ(times.drawn_windows, 2);
  }
  SetRetainFrame(*gl, false);
  EXPECT_EQ(Differing(zoomed, Frame()), 0);
}

TEST_F(FramePathTest, AFlatBoxHasItsKindsExactColourAtItsCentre) {
  for (int f = 0; f < 3; ++f) Frame();
  const Image img = Frame();
  const TimelineDrawCache& c = state.timeline_cache;
  const TraceView* views[2] = {state.a.get(), state.b.get()};
  int checked = 0;
  size_t probe[2] = {0, 0};
  for (size_t r = 0; r < c.rows.size(); ++r) {
    for (int w = 0; w < 2; ++w) {
      if (!views[w]) continue;
      ASSERT_LT(probe[w], state.probes.lane_rects[w].size());
      const Rect& band = state.probes.lane_rects[w][probe[w]++];
      for (const TimelineBox& b : c.boxes[w][r]) {
        // Wide enough for a centre away from its edges, too narrow for a label.
        if (b.x1 - b.x0 < 6 || b.x1 - b.x0 > 60) continue;
        const ImVec4 px = img.At(band.x0 + (b.x0 + b.x1) / 2, (band.y0 + band.y1) / 2);
        const ImVec4 want = ImGui::ColorConvertU32ToFloat4(KindColor(b.kind, b.count > 1));
        EXPECT_EQ(px.x, std::round(want.x * 255));
        EXPECT_EQ(px.y, std::round(want.y * 255));
        EXPECT_EQ(px.z, std::round(want.z * 255));
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
}  // namespace shardscope::viewer
