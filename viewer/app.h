// The viewer program: loads the traces (and the scenario to tune), then runs the ImGui frame
// loop in a GLFW window, or renders a fixed number of frames off-screen and writes a PNG.
//
// Contents:
//   ViewerOptions     what `shardscope view` parses
//   LoadViewerState   traces + scenario → ViewerState (no window; tests and the bench use it)
//   GlWindow          a GLFW window with its OpenGL 3.3 context and the ImGui backends
//   OpenGlWindow      opens one (invisible for headless use)
//   RenderFrame       one ImGui frame of the viewer (or of any draw call) into the back buffer,
//                     redrawing only the windows that changed (viewer/retained_frame.h)
//   SetRetainFrame    turns that off (every window drawn every frame); RetainsFrames: is it on
//   SaveScreenshot    glReadPixels of the back buffer (before the swap) → PNG
//   RunViewer         LoadViewerState + the window or the headless screenshot
//
// Traces: two are A (predicted) then B (measured); one goes to A or B by its metadata kind.
// With --scenario the scenario's prediction is A and at most one trace (the measured) is given.
// Headless (--screenshot): an invisible window (run under xvfb-run; Mesa's llvmpipe gives the
// OpenGL 3.3 context), `frames` frames, the tuner's first prediction awaited, and the back
// buffer read with glReadPixels before the swap.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "viewer/viewer_state.h"

namespace shardscope::viewer {

struct ViewerOptions {
  std::vector<std::string> traces;
  std::string scenario;
  std::string screenshot;  // non-empty: headless
  int frames = 3;
  int width = 1600, height = 1000;
  bool overlay = false;     // lanes overlaid instead of stacked
  bool select_top = false;  // select the comparison table's first row (for pictures)
};

Status LoadViewerState(const ViewerOptions& options, ViewerState* state);

// Owns the window, the GL context and the ImGui context; closes them on destruction.
class GlWindow {
 public:
  ~GlWindow();
  struct Impl;
  std::unique_ptr<Impl> impl;
};
// RuntimeError naming GLFW's message when there is no display or no OpenGL 3.3.
Result<std::unique_ptr<GlWindow>> OpenGlWindow(int width, int height, bool visible);
// Where a frame's time goes on the calling thread (the bench's breakdown), in ms: building the
// ImGui frame (the viewer's own work) and handing the draw lists to OpenGL.
struct RenderTimes {
  double build_ms = 0;
  double submit_ms = 0;
  int drawn_windows = 0, windows = 0;  // top-level windows drawn again, of all
};
void RenderFrame(GlWindow& window, ViewerState* state, RenderTimes* times = nullptr);
// The same around `draw` (the bench's baselines: a blank frame, empty windows).
void RenderFrame(GlWindow& window, const std::function<void()>& draw, RenderTimes* times);
// Waits for the GPU (software renderer) to finish the frame, for timing.
void FinishFrame(GlWindow& window);
// Whether a frame redraws only the windows that changed (viewer/retained_frame.h): on by
// default with a software renderer, whose back buffer keeps its pixels; never otherwise.
void SetRetainFrame(GlWindow& window, bool retain);
// Whether it does now.
bool RetainsFrames(const GlWindow& window);
Status SaveScreenshot(GlWindow& window, const std::string& path);
// True once the user closed the window.
bool WindowClosed(GlWindow& window);
// Shows the back buffer and reads input.
void PresentFrame(GlWindow& window);
// `probes`, when given, receives where the last frame drew things (for the screenshot tests).
Status RunViewer(const ViewerOptions& options, Probes* probes = nullptr);

}  // namespace shardscope::viewer
