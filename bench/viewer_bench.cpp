// The viewer's performance targets, timed (medians over --reps):
//   load    opening two traces of --events events each (synthetic, written to a temporary
//           folder and removed): read, parse, tracks, join table, statistics; target < 3 s
//   frame   one frame at full zoom-out and at a busy zoom-in (1 ms of the step's middle);
//           target < 16 ms. With --gl (under xvfb-run) the frame is drawn by OpenGL and
//           finished (glFinish); without, ImGui builds the frame with no renderer. Each part
//           is reported: the viewer's CPU work (build) apart from what the renderer costs.
//           Each zoom twice: the view held still (the timeline's cached boxes re-emitted; with
//           --gl on llvmpipe no window changed, so none is drawn again) and moved a pixel every
//           frame (merged again; the timeline and memory windows drawn again). With --gl also
//           every window drawn every frame (as with a GPU), with the flat fill on and off. With
//           --gl two baselines of the same size show what the software rasteriser costs whatever
//           the viewer draws: a blank frame (clear and present) and one full-size rectangle,
//           blended (a window background) and through the flat-fill program (the plots' boxes).
//           After the still zoom-out and zoom-in frames: the pixels each window's triangles cover.
//   tune    a tuning change (forward prefetch depth toggled) on --scenario, from the request
//           to the frame drawn with the new prediction; target < 200 ms
// Usage: viewer_bench [--events N] [--reps R] [--scenario FILE] [--gl]
#include <GL/gl.h>
#include <fmt/core.h>
#include <imgui.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/trace/trace_io.h"
#include "viewer/app.h"
#include "viewer/compare_model.h"
#include "viewer/flat_fill.h"
#include "viewer/panels.h"
#include "viewer/viewer_state.h"

using namespace shardscope;
using namespace shardscope::viewer;
using Clock = std::chrono::steady_clock;

namespace {

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// CPU time of the whole process (all threads), ms: on a shared machine wall time also counts
// the time other processes held the cores.
double CpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A step of `events` work events over 8 ranks: compute kernels back to back, all-gathers and
// reduce-scatters beside them, a memory counter; `scale` stretches durations (the "measured").
Trace SyntheticTrace(int64_t events, double scale, uint32_t seed, const char* kind) {
  Trace t;
  t.metadata.kind = kind;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> dur(1'000, 40'000);
  const int ranks = 8;
  const int64_t per_rank = events / ranks;
  for (int r = 0; r < ranks; ++r) {
    t.AddMarker(r, 0, "step_begin");
    int64_t clock[3] = {0, 0, 0};
    int64_t allocated = 1LL << 30;
    for (int64_t i = 0; i < per_rank; ++i) {
      const int pick = static_cast<int>(i % 5);
      const int lane = pick < 3 ? kLaneCompute : (pick == 3 ? kLaneAllGather : kLaneReduceScatter);
      const int slot = lane == kLaneCompute ? 0 : lane - 1;
      const int64_t d = static_cast<int64_t>(static_cast<double>(dur(rng)) * scale);
      const int64_t unit = (i / 500) % 64;
      const std::string op_id =
          lane == kLaneCompute
              ? fmt::format("fwd/layers.{}/compute:{}", unit, i % 500 + 1)
              : fmt::format("fwd/layers.{}/{}:{}", unit,
                            lane == kLaneAllGather ? "all_gather" : "reduce_scatter", i % 500 + 1);
      WorkEvent& e =
          t.AddWork(r, lane, lane == kLaneCompute ? "gemm" : "ncclKernel", op_id, clock[slot], d);
      if (lane != kLaneCompute) {
        e.bytes = 1 << 24;
        e.group_size = 8;
        e.busbw_gbps = 300;
      }
      clock[slot] += d + 200;
      if (i % 100 == 0) {
        allocated += (i % 200 == 0 ? 1 : -1) * (64LL << 20);
        t.AddCounter(r, clock[0], "activations_bytes", allocated);
        t.AddCounter(r, clock[0], "allocated_bytes", allocated);
      }
    }
  }
  return t;
}

// One ImGui frame timed: wall and process CPU time of the whole frame, and its parts: `build`
// (the viewer's ImGui frame, this thread), `submit` (draw lists to OpenGL), `finish` (glFinish:
// llvmpipe rasterising), `present` (the swap: the image copied to the X server); vertices drawn.
struct FrameTime {
  double wall_ms = 0, cpu_ms = 0;
  double build_ms = 0, submit_ms = 0, finish_ms = 0, present_ms = 0;
  double vertices = 0;
  double drawn_windows = 0, windows = 0;  // top-level windows drawn again, of all
};

FrameTime TimeFrame(const std::function<void()>& draw, GlWindow* gl) {
  FrameTime t;
  const auto t0 = Clock::now();
  const double c0 = CpuMs();
  if (gl) {
    RenderTimes parts;
    RenderFrame(*gl, draw, &parts);
    t.build_ms = parts.build_ms;
    t.submit_ms = parts.submit_ms;
    t.drawn_windows = parts.drawn_windows;
    t.windows = parts.windows;
    const auto f0 = Clock::now();
    FinishFrame(*gl);
    const auto f1 = Clock::now();
    PresentFrame(*gl);
    t.finish_ms = Ms(f0, f1);
    t.present_ms = Ms(f1, Clock::now());
  } else {
    ImGui::GetIO().DeltaTime = 1.0f / 60;
    ImGui::NewFrame();
    draw();
    ImGui::Render();
    t.build_ms = Ms(t0, Clock::now());
  }
  t.vertices = ImGui::GetDrawData() ? ImGui::GetDrawData()->TotalVtxCount : 0;
  t.wall_ms = Ms(t0, Clock::now());
  t.cpu_ms = CpuMs() - c0;
  return t;
}

// Pixels the last frame's triangles cover (unclipped), per window, blended and flat-filled: a
// software rasteriser's work grows with them.
void PrintCoverage() {
  const ImDrawData* d = ImGui::GetDrawData();
  if (!d) return;
  double total[2] = {0, 0};
  for (int n = 0; n < d->CmdListsCount; ++n) {
    const ImDrawList* l = d->CmdLists[n];
    double px[2] = {0, 0};
    bool flat = false;
    for (const ImDrawCmd& c : l->CmdBuffer) {
      if (c.UserCallback == FlatFillCallback) flat = FlatFillEnabled();
      if (c.UserCallback == ImDrawCallback_ResetRenderState) flat = false;
      if (c.UserCallback) continue;
      for (unsigned i = 0; i + 2 < c.ElemCount; i += 3) {
        const ImVec2 a = l->VtxBuffer[c.VtxOffset + l->IdxBuffer[c.IdxOffset + i]].pos;
        const ImVec2 b = l->VtxBuffer[c.VtxOffset + l->IdxBuffer[c.IdxOffset + i + 1]].pos;
        const ImVec2 e = l->VtxBuffer[c.VtxOffset + l->IdxBuffer[c.IdxOffset + i + 2]].pos;
        px[flat] += std::abs((b.x - a.x) * (e.y - a.y) - (e.x - a.x) * (b.y - a.y)) / 2;
      }
    }
    fmt::print(
        "         {:<40} {:>4} commands, {:>6} vertices, {:>8.0f} px blended, {:>8.0f} px flat\n",
        l->_OwnerName ? l->_OwnerName : "?", l->CmdBuffer.Size, l->VtxBuffer.Size, px[0], px[1]);
    total[0] += px[0];
    total[1] += px[1];
  }
  fmt::print("         total {:.0f} px blended, {:.0f} px flat\n", total[0], total[1]);
}

FrameTime TimeFrame(ViewerState* s, GlWindow* gl) {
  return TimeFrame([s] { DrawViewerFrame(s); }, gl);
}

// One rectangle over the whole display: what a full-window background fill costs (the
// viewer's windows draw none; the clear paints their colour).
void FullSizeRect() {
  ImGui::GetBackgroundDrawList()->AddRectFilled(ImVec2(0, 0), ImGui::GetIO().DisplaySize,
                                                IM_COL32(15, 15, 15, 240));
}

// The same, opaque, through the flat-fill program (what the plots' boxes cost per pixel).
void FullSizeFlatRect() {
  ImDrawList* dl = ImGui::GetBackgroundDrawList();
  FlatFillSection flat(dl);
  dl->AddRectFilled(ImVec2(0, 0), ImGui::GetIO().DisplaySize, IM_COL32(15, 15, 15, 255));
}

}  // namespace

int main(int argc, char** argv) {
  int64_t events = 1'000'000;
  int reps = 5;
  std::string scenario = std::string(SHARDSCOPE_SOURCE_DIR) + "/examples/dense_llama3_8b.json";
  bool use_gl = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--events" && i + 1 < argc)
      events = std::atoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--scenario" && i + 1 < argc)
      scenario = argv[++i];
    else if (a == "--gl")
      use_gl = true;
    else {
      fmt::print(stderr, "usage: viewer_bench [--events N] [--reps R] [--scenario FILE] [--gl]\n");
      return 2;
    }
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("viewer_bench_{}", getpid());
  std::filesystem::create_directories(dir);
  const std::string pa = (dir / "a.trace.json").string(), pb = (dir / "b.trace.json").string();
  const auto g0 = Clock::now();
  if (Status st = WriteTrace(SyntheticTrace(events, 1.0, 1, "predicted"), pa); !st.ok()) {
    fmt::print(stderr, "{}\n", st.message());
    return 3;
  }
  if (Status st = WriteTrace(SyntheticTrace(events, 1.1, 2, "measured"), pb); !st.ok()) {
    fmt::print(stderr, "{}\n", st.message());
    return 3;
  }
  fmt::print("generated two traces of {} events each in {:.0f} ms ({} MB each)\n", events,
             Ms(g0, Clock::now()), std::filesystem::file_size(pa) >> 20);

  std::vector<double> load_ms, load_cpu_ms;
  ViewerState state;
  for (int r = 0; r < reps; ++r) {
    ViewerState s;
    const auto t0 = Clock::now();
    const double c0 = CpuMs();
    ViewerOptions o;
    o.traces = {pa, pb};
    if (Status st = LoadViewerState(o, &s); !st.ok()) {
      fmt::print(stderr, "{}\n", st.message());
      return 3;
    }
    load_ms.push_back(Ms(t0, Clock::now()));
    load_cpu_ms.push_back(CpuMs() - c0);
    if (r + 1 == reps) state = std::move(s);
  }
  {
    // Where the time goes, one trace on one thread.
    const double c0 = CpuMs();
    Result<Trace> ta = ReadTrace(pa);
    const double c1 = CpuMs();
    TraceView va = MakeTraceView(std::move(*ta), "a");
    const double c2 = CpuMs();
    const std::vector<CompareRow> rows = BuildCompareRows(va, *state.b);
    const double c3 = CpuMs();
    // What runs after both loads, on the loading thread: the join, the row index, the summary.
    ViewerState installed;
    const auto i0 = Clock::now();
    SetTraces(&installed, std::make_shared<const TraceView>(std::move(va)), state.b);
    const double install_ms = Ms(i0, Clock::now());
    fmt::print(
        "load   CPU time, one trace on one thread: read+parse {:.0f} ms, view (tracks, exposed, "
        "memory, stats) {:.0f} ms; join with the other {:.0f} ms (both sums); after both loads "
        "(join, row index, summary) {:.0f} ms wall\n",
        c1 - c0, c2 - c1, c3 - c2, install_ms);
  }
  std::filesystem::remove_all(dir);
  fmt::print(
      "load   two traces of {} events (loaded in parallel): median {:.0f} ms wall, {:.0f} ms CPU "
      "(target 3000), {} table rows\n",
      events, Median(load_ms), Median(load_cpu_ms), state.rows.size());

  std::unique_ptr<GlWindow> gl;
  if (use_gl) {
    Result<std::unique_ptr<GlWindow>> w = OpenGlWindow(1600, 1000, false);
    if (!w.ok()) {
      fmt::print(stderr, "{}\n", w.status().message());
      return 3;
    }
    gl = std::move(*w);
    fmt::print("frame  OpenGL renderer: {} ({})\n",
               reinterpret_cast<const char*>(glGetString(GL_RENDERER)),
               reinterpret_cast<const char*>(glGetString(GL_VERSION)));
  } else {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1600, 1000);
    unsigned char* pixels = nullptr;
    int fw = 0, fh = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &fw, &fh);
  }
  // Medians of each part over the reps.
  auto frames = [&](const std::function<void()>& draw, const std::function<void(int)>& setup) {
    std::vector<FrameTime> all;
    TimeFrame(draw, gl.get());  // layout settles on the first frame
    for (int r = 0; r < std::max(reps, 5); ++r) {
      setup(r);
      all.push_back(TimeFrame(draw, gl.get()));
    }
    auto med = [&](double FrameTime::*field) {
      std::vector<double> v;
      for (const FrameTime& t : all) v.push_back(t.*field);
      return Median(v);
    };
    FrameTime m;
    for (double FrameTime::*f :
         {&FrameTime::wall_ms, &FrameTime::cpu_ms, &FrameTime::build_ms, &FrameTime::submit_ms,
          &FrameTime::finish_ms, &FrameTime::present_ms, &FrameTime::vertices,
          &FrameTime::drawn_windows, &FrameTime::windows}) {
      m.*f = med(f);
    }
    return m;
  };
  const int64_t end = std::max(state.a->end_ns, state.b->end_ns);
  const auto draw = [&] { DrawViewerFrame(&state); };
  const auto full = [&](int) { state.viewport.Fit(0, end); };
  const auto busy = [&](int) {
    state.viewport.start_ns = end / 2;
    state.viewport.span_ns = 1'000'000;
  };
  // The view one pixel further each frame: nothing cached is reusable.
  const auto moving = [&](const std::function<void(int)>& place) {
    return [&state, place](int r) {
      place(r);
      state.viewport.Pan(r % 2 == 0 ? 1.0 : -1.0);
    };
  };
  std::vector<std::pair<std::string, FrameTime>> results;
  results.emplace_back("full zoom-out, view still", frames(draw, full));
  PrintCoverage();
  results.emplace_back("full zoom-out, view moving", frames(draw, moving(full)));
  results.emplace_back("busy zoom-in (1 ms), view still", frames(draw, busy));
  PrintCoverage();
  results.emplace_back("busy zoom-in (1 ms), view moving", frames(draw, moving(busy)));
  if (gl) {
    // Every window drawn every frame (as with a GPU), then also with the plots' opaque fills
    // through ImGui's textured, blended shader (the path before the flat fill).
    SetRetainFrame(*gl, false);
    results.emplace_back("full zoom-out, every window drawn", frames(draw, full));
    results.emplace_back("busy zoom-in (1 ms), every window drawn", frames(draw, busy));
    SetFlatFillEnabled(false);
    results.emplace_back("full zoom-out, every window drawn, flat fill off", frames(draw, full));
    results.emplace_back("busy zoom-in (1 ms), every window drawn, flat fill off",
                         frames(draw, busy));
    SetFlatFillEnabled(true);
    results.emplace_back("baseline: blank frame", frames([] {}, [](int) {}));
    results.emplace_back("baseline: one full-size blended rectangle",
                         frames(FullSizeRect, [](int) {}));
    results.emplace_back("baseline: one full-size flat-fill rectangle",
                         frames(FullSizeFlatRect, [](int) {}));
    SetRetainFrame(*gl, true);
  }
  const char* lp_threads = std::getenv("LP_NUM_THREADS");
  for (const auto& [what, t] : results) {
    fmt::print(
        "frame  {}{}, {}: median {:.2f} ms wall / {:.2f} ms CPU (all threads) (target 16); parts: "
        "build {:.2f}, submit {:.2f}, finish {:.2f}, present {:.2f} ms; {:.0f} vertices; {:.0f} of "
        "{:.0f} windows drawn\n",
        gl ? "OpenGL (llvmpipe under Xvfb" : "ImGui without renderer",
        gl ? fmt::format(", LP_NUM_THREADS={})", lp_threads ? lp_threads : "default") : "", what,
        t.wall_ms, t.cpu_ms, t.build_ms, t.submit_ms, t.finish_ms, t.present_ms, t.vertices,
        t.drawn_windows, t.windows);
  }

  ViewerState tuned;
  ViewerOptions o;
  o.scenario = scenario;
  if (Status st = LoadViewerState(o, &tuned); !st.ok()) {
    fmt::print(stderr, "{}\n", st.message());
    return 3;
  }
  TimeFrame(&tuned, gl.get());
  std::vector<double> tune_ms, tune_cpu_ms;
  for (int r = 0; r < reps; ++r) {
    TuningKnobs k = tuned.knobs;
    k.forward_prefetch_depth = k.forward_prefetch_depth == 1 ? 2 : 1;
    tuned.knobs = k;
    const auto t0 = Clock::now();
    const double c0 = CpuMs();
    tuned.tuner->Request(k);
    tuned.tuner->WaitIdle(std::chrono::seconds(60));
    TimeFrame(&tuned, gl.get());  // takes the prediction and draws it
    tune_ms.push_back(Ms(t0, Clock::now()));
    tune_cpu_ms.push_back(CpuMs() - c0);
    if (!tuned.tuning_error.empty()) {
      fmt::print(stderr, "tuning failed: {}\n", tuned.tuning_error);
      return 3;
    }
  }
  fmt::print(
      "tune   {} (prefetch depth toggled, {} events predicted): median {:.0f} ms wall, {:.0f} ms "
      "CPU (target 200)\n",
      std::filesystem::path(scenario).filename().string(), tuned.a->trace.events.size(),
      Median(tune_ms), Median(tune_cpu_ms));
  if (!gl) ImGui::DestroyContext();
  return 0;
}
