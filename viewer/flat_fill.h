// Opaque plot fills drawn by a flat-colour OpenGL program with blending off. ImGui's own shader
// samples the font atlas and blends every pixel, and with Mesa's llvmpipe shading pixels is
// most of a frame; the timeline's boxes and the memory bands are opaque one-colour rectangles
// and need neither. A flat section of a draw list is ordinary ImGui geometry (the view model
// and the level-1 tests see the same vertices) between two callbacks that the ImGui 1.86
// OpenGL3 backend runs in order: the first makes it draw what follows with our program, the
// second (ImDrawCallback_ResetRenderState) gives it its own state back. Without a GL renderer
// (level-1 tests, the bench without --gl) the draw data is never submitted and the callbacks
// never run; before InitFlatFill, or when it failed, the callback does nothing and ImGui's
// shader draws the same geometry.
//
// Contents:
//   InitFlatFill       compiles the program in the current GL context (after the backend's Init)
//   ShutdownFlatFill   deletes it (before the context goes)
//   SetFlatFillEnabled false: flat sections are drawn by ImGui's shader (the old path; the
//                      screenshot test and the bench compare the two)
//   FlatFillCallback   the callback a flat section opens with
//   FlatFillSection    RAII: the draw list's geometry while it lives is a flat section
//
// Only opaque, single-colour, unrounded AddRectFilled geometry belongs in a flat section: the
// program writes each triangle's vertex colour as it is, alpha included, without blending.
#pragma once

#include <imgui.h>

#include "core/util/status.h"

namespace shardscope::viewer {

// RuntimeError with the GL compiler's log when the program does not compile or link.
Status InitFlatFill();
void ShutdownFlatFill();
void SetFlatFillEnabled(bool enabled);
bool FlatFillEnabled();

void FlatFillCallback(const ImDrawList* list, const ImDrawCmd* cmd);

class FlatFillSection {
 public:
  explicit FlatFillSection(ImDrawList* dl) : dl_(dl) {
    dl_->AddCallback(FlatFillCallback, nullptr);
  }
  ~FlatFillSection() { dl_->AddCallback(ImDrawCallback_ResetRenderState, nullptr); }
  FlatFillSection(const FlatFillSection&) = delete;
  FlatFillSection& operator=(const FlatFillSection&) = delete;

 private:
  ImDrawList* dl_;
};

}  // namespace shardscope::viewer
