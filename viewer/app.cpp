#include "viewer/app.h"

#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/config/scenario.h"
#include "core/util/file_io.h"
#include "viewer/flat_fill.h"
#include "viewer/panels.h"
#include "viewer/png_writer.h"
#include "viewer/retained_frame.h"

namespace shardscope::viewer {
namespace {

std::string g_glfw_error;

// Dark style's window background (0.06, alpha 0.94) over a (0.08, 0.08, 0.09) clear.
constexpr float kClearColor[3] = {0.06f * 0.94f + 0.08f * 0.06f, 0.06f * 0.94f + 0.08f * 0.06f,
                                  0.06f * 0.94f + 0.09f * 0.06f};

void OnGlfwError(int code, const char* description) {
  g_glfw_error = std::string(description) + " (GLFW error " + std::to_string(code) + ")";
}

Status StartTuner(const std::string& path, ViewerState* s, std::shared_ptr<const TraceView>* a) {
  SS_ASSIGN_OR_RETURN(Scenario scenario, LoadScenario(path));
  SS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return InvalidInput(path + ": not valid JSON");
  const std::string base_dir = std::filesystem::absolute(path).parent_path().string();
  s->knobs = KnobsFromScenario(scenario, doc);
  s->tuner = std::make_unique<Tuner>(std::move(doc), path, base_dir);
  Prediction first = s->tuner->Predict(s->knobs, 0);
  SS_RETURN_IF_ERROR(first.status);
  s->tuning_seconds = first.seconds;
  *a = std::move(first.view);
  return Status::Ok();
}

}  // namespace

Status LoadViewerState(const ViewerOptions& options, ViewerState* s) {
  if (!options.scenario.empty() && options.traces.size() > 1) {
    return InvalidInput(
        "view: with --scenario give at most one trace (the measured one); the "
        "scenario's prediction takes the other place");
  }
  if (options.scenario.empty() && options.traces.empty()) {
    return InvalidInput("view: give one or two traces, or --scenario FILE");
  }
  // Both traces load at once: parsing is the slow part and they are independent.
  std::vector<std::future<Result<TraceView>>> loads;
  for (const std::string& path : options.traces) {
    loads.push_back(std::async(std::launch::async, [path] { return LoadTraceView(path); }));
  }
  std::vector<std::shared_ptr<const TraceView>> views;
  for (auto& f : loads) {
    Result<TraceView> v = f.get();
    if (!v.ok()) return v.status();
    views.push_back(std::make_shared<const TraceView>(std::move(*v)));
  }
  std::shared_ptr<const TraceView> a, b;
  if (!options.scenario.empty()) {
    SS_RETURN_IF_ERROR(StartTuner(options.scenario, s, &a));
    if (!views.empty()) b = views[0];
  } else if (views.size() == 2) {
    a = views[0];
    b = views[1];
  } else if (views[0]->trace.metadata.kind == "measured") {
    b = views[0];
  } else {
    a = views[0];
  }
  SetTraces(s, std::move(a), std::move(b));
  s->mode = options.overlay ? LaneMode::kOverlaid : LaneMode::kStacked;
  if (options.select_top && !s->rows.empty()) SelectRow(s, 0);
  return Status::Ok();
}

struct GlWindow::Impl {
  GLFWwindow* window = nullptr;
  RetainedFrame retained;
  bool retains = false;  // RetainsPixels() of the window's context
  bool retain = false;   // retains, unless SetRetainFrame(false)
};

GlWindow::~GlWindow() {
  if (!impl || !impl->window) return;
  ShutdownFlatFill();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(impl->window);
  glfwTerminate();
}

Result<std::unique_ptr<GlWindow>> OpenGlWindow(int width, int height, bool visible) {
  glfwSetErrorCallback(OnGlfwError);
  if (!glfwInit()) {
    return RuntimeError("view: cannot open a window: " + g_glfw_error +
                        " (set DISPLAY, or run headless under xvfb-run -a)");
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_VISIBLE, visible ? GLFW_TRUE : GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(width, height, "shardscope view", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    return RuntimeError("view: cannot create an OpenGL 3.3 window: " + g_glfw_error);
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(visible ? 1 : 0);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;  // the layout is fixed; nothing to remember
  ImGui::StyleColorsDark();
  // The windows tile the display, so their background would fill every pixel a second time,
  // blended (with Mesa's llvmpipe a full-window fill costs as much CPU as a whole frame's
  // budget). The clear paints that colour instead: dark style's 0.94 over the old clear colour.
  ImGui::GetStyle().Colors[ImGuiCol_WindowBg].w = 0.0f;
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  auto out = std::make_unique<GlWindow>();
  out->impl = std::make_unique<GlWindow::Impl>();
  out->impl->window = window;
  out->impl->retains = out->impl->retain = RetainsPixels([window] { glfwSwapBuffers(window); });
  // An expose (another window moved off ours) may lose what the kept windows had drawn.
  glfwSetWindowUserPointer(window, out->impl.get());
  glfwSetWindowRefreshCallback(window, [](GLFWwindow* w) {
    static_cast<GlWindow::Impl*>(glfwGetWindowUserPointer(w))->retained.Invalidate();
  });
  SS_RETURN_IF_ERROR(InitFlatFill());  // `out` closes the window on the way
  // ImGui draws glyphs at whole pixels, one texel to a pixel, so sampling the font atlas at
  // the nearest texel gives the same picture as the backend's bilinear filter, for less work
  // per pixel in a software renderer.
  ImGui_ImplOpenGL3_CreateDeviceObjects();
  GLint last_texture = 0;
  glGetIntegerv(GL_TEXTURE_BINDING_2D, &last_texture);
  glBindTexture(GL_TEXTURE_2D,
                static_cast<GLuint>(reinterpret_cast<intptr_t>(ImGui::GetIO().Fonts->TexID)));
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(last_texture));
  return out;
}

void RenderFrame(GlWindow& gl, ViewerState* s, RenderTimes* times) {
  RenderFrame(
      gl, [s] { DrawViewerFrame(s); }, times);
}

void RenderFrame(GlWindow& gl, const std::function<void()>& draw, RenderTimes* times) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  draw();
  ImGui::Render();
  const auto t1 = Clock::now();
  int fb_w = 0, fb_h = 0;
  glfwGetFramebufferSize(gl.impl->window, &fb_w, &fb_h);
  RetainedFrame& retained = gl.impl->retained;
  retained.Render(ImGui::GetDrawData(), fb_w, fb_h, kClearColor, gl.impl->retain);
  if (times) {
    times->build_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    times->submit_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    times->drawn_windows = retained.drawn_windows();
    times->windows = retained.windows();
  }
}

void FinishFrame(GlWindow&) { glFinish(); }

void SetRetainFrame(GlWindow& gl, bool retain) { gl.impl->retain = retain && gl.impl->retains; }

bool RetainsFrames(const GlWindow& gl) { return gl.impl->retain; }

Status SaveScreenshot(GlWindow& gl, const std::string& path) {
  int w = 0, h = 0;
  glfwGetFramebufferSize(gl.impl->window, &w, &h);
  std::vector<uint8_t> pixels(static_cast<size_t>(w) * h * 4);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL's rows run bottom-up; PNG's top-down.
  std::vector<uint8_t> flipped(pixels.size());
  const size_t row = static_cast<size_t>(w) * 4;
  for (int y = 0; y < h; ++y) {
    std::copy_n(pixels.data() + (h - 1 - y) * row, row, flipped.data() + y * row);
  }
  for (size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;  // opaque, whatever GL kept
  return WritePngAtomic(path, w, h, flipped);
}

bool WindowClosed(GlWindow& gl) { return glfwWindowShouldClose(gl.impl->window); }

void PresentFrame(GlWindow& gl) {
  glfwSwapBuffers(gl.impl->window);
  glfwPollEvents();
}

Status RunViewer(const ViewerOptions& options, Probes* probes) {
  ViewerState state;
  state.headless = !options.screenshot.empty();
  SS_RETURN_IF_ERROR(LoadViewerState(options, &state));
  SS_ASSIGN_OR_RETURN(std::unique_ptr<GlWindow> gl,
                      OpenGlWindow(options.width, options.height, !state.headless));
  Status status = Status::Ok();
  if (state.headless) {
    const int frames = std::max(options.frames, 1);
    for (int f = 0; f < frames; ++f) {
      // A picture shows the prediction of the current knobs, never a half-finished one.
      if (state.tuner) state.tuner->WaitIdle(std::chrono::seconds(60));
      RenderFrame(*gl, &state);
      if (f + 1 == frames) status = SaveScreenshot(*gl, options.screenshot);
      PresentFrame(*gl);
    }
  } else {
    while (!WindowClosed(*gl)) {
      RenderFrame(*gl, &state);
      PresentFrame(*gl);
    }
  }
  if (probes) *probes = state.probes;
  return status;
}

}  // namespace shardscope::viewer
