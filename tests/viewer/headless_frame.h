// A level-1 fixture: an ImGui context with no renderer (the font atlas built, draw data never
// submitted) and a ViewerState holding the golden predicted / measured pair; Frame() runs one
// whole viewer frame (NewFrame → DrawViewerFrame → Render).
#pragma once

#include <gtest/gtest.h>
#include <imgui.h>

#include <memory>

#include "tests/viewer/viewer_test_util.h"
#include "viewer/panels.h"
#include "viewer/viewer_state.h"

namespace shardscope::viewer::testing {

class HeadlessFrameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(1200, 800);
    io.DeltaTime = 1.0f / 60;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    SetTraces(&s, std::make_shared<const TraceView>(MakeTraceView(PredictedPair(), "")),
              std::make_shared<const TraceView>(MakeTraceView(MeasuredPair(), "")));
  }
  void TearDown() override { ImGui::DestroyContext(); }
  void Frame() {
    ImGui::NewFrame();
    DrawViewerFrame(&s);
    ImGui::Render();
  }
  ViewerState s;
};

}  // namespace shardscope::viewer::testing
