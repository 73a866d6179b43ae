#include "viewer/retained_frame.h"

// GL_GLEXT_PROTOTYPES: see viewer/CMakeLists.txt.
#include <GL/gl.h>
#include <imgui_impl_opengl3.h>
#include <imgui_internal.h>

#include <cmath>
#include <cstring>
#include <string_view>

namespace shardscope::viewer {
namespace {

template <typename T>
void Append(std::vector<char>* out, const T& v) {
  const size_t n = out->size();
  out->resize(n + sizeof(T));
  std::memcpy(out->data() + n, &v, sizeof(T));
}

void AppendList(const ImDrawList& l, std::vector<char>* out) {
  const char* vtx = reinterpret_cast<const char*>(l.VtxBuffer.Data);
  const char* idx = reinterpret_cast<const char*>(l.IdxBuffer.Data);
  Append(out, l.VtxBuffer.Size);
  out->insert(out->end(), vtx, vtx + l.VtxBuffer.size_in_bytes());
  Append(out, l.IdxBuffer.Size);
  out->insert(out->end(), idx, idx + l.IdxBuffer.size_in_bytes());
  for (const ImDrawCmd& c : l.CmdBuffer) {
    Append(out, c.ClipRect);
    Append(out, c.TextureId);
    Append(out, c.VtxOffset);
    Append(out, c.IdxOffset);
    Append(out, c.ElemCount);
    Append(out, c.UserCallback);
    Append(out, c.UserCallbackData);
  }
}

// Consecutive draw lists of one top-level window ("Name", then its children "Name/child_…").
std::vector<RetainedFrame::Window> Windows(const ImDrawData& dd) {
  std::vector<RetainedFrame::Window> out;
  for (int i = 0; i < dd.CmdListsCount; ++i) {
    const ImDrawList* l = dd.CmdLists[i];
    std::string name = l->_OwnerName ? l->_OwnerName : "";
    name = name.substr(0, name.find('/'));
    if (out.empty() || out.back().name != name) {
      RetainedFrame::Window w;
      w.name = name;
      // A list of no window (the background or foreground list) covers the display.
      w.rect = ImVec4(dd.DisplayPos.x, dd.DisplayPos.y, dd.DisplayPos.x + dd.DisplaySize.x,
                      dd.DisplayPos.y + dd.DisplaySize.y);
      if (const ImGuiWindow* win = ImGui::FindWindowByName(name.c_str())) {
        w.rect = ImVec4(win->Pos.x, win->Pos.y, win->Pos.x + win->Size.x, win->Pos.y + win->Size.y);
      }
      out.push_back(std::move(w));
    }
    out.back().lists.push_back(l);
    AppendList(*l, &out.back().bytes);
  }
  return out;
}

bool Overlap(const ImVec4& a, const ImVec4& b) {
  return a.x < b.z && b.x < a.z && a.y < b.w && b.y < a.w;
}

bool WholePixels(const ImVec4& r) {
  return r.x == std::floor(r.x) && r.y == std::floor(r.y) && r.z == std::floor(r.z) &&
         r.w == std::floor(r.w);
}

// Whether only the changed windows may be drawn: the same windows at the same places, none
// overlapping another, each on whole pixels (its clear must not touch a neighbour's pixels).
bool SameLayout(const std::vector<RetainedFrame::Window>& now,
                const std::vector<RetainedFrame::Window>& last) {
  if (now.size() != last.size()) return false;
  for (size_t i = 0; i < now.size(); ++i) {
    const ImVec4 &a = now[i].rect, &b = last[i].rect;
    if (now[i].name != last[i].name || a.x != b.x || a.y != b.y || a.z != b.z || a.w != b.w ||
        !WholePixels(a)) {
      return false;
    }
    for (size_t j = 0; j < i; ++j) {
      if (Overlap(a, now[j].rect)) return false;
    }
  }
  return true;
}

void Draw(const ImDrawData& dd, std::vector<ImDrawList*>& lists) {
  if (lists.empty()) return;
  ImDrawData part = dd;
  part.CmdLists = lists.data();
  part.CmdListsCount = static_cast<int>(lists.size());
  part.TotalVtxCount = part.TotalIdxCount = 0;
  for (const ImDrawList* l : lists) {
    part.TotalVtxCount += l->VtxBuffer.Size;
    part.TotalIdxCount += l->IdxBuffer.Size;
  }
  ImGui_ImplOpenGL3_RenderDrawData(&part);
}

}  // namespace

bool RetainsPixels(const std::function<void()>& swap) {
  const char* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
  const std::string_view r = renderer ? renderer : "";
  if (!r.starts_with("llvmpipe") && !r.starts_with("softpipe")) return false;
  // Two swaps with two colours: a pair of buffers that alternate shows the first colour after
  // the second swap, not the second.
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  bool kept = true;
  for (const unsigned char probe : {0x5a, 0xa5}) {
    glClearColor(probe / 255.0f, 0, 0, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    swap();
    unsigned char px[4] = {0, 0, 0, 0};
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, px);
    kept = kept && px[0] == probe && px[1] == 0 && px[2] == 0;
  }
  glClearColor(0, 0, 0, 1);
  glClear(GL_COLOR_BUFFER_BIT);
  return kept;
}

void RetainedFrame::Render(ImDrawData* dd, int fb_width, int fb_height, const float clear[3],
                           bool retain) {
  std::vector<Window> now = Windows(*dd);
  windows_ = static_cast<int>(now.size());
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glViewport(0, 0, fb_width, fb_height);
  glClearColor(clear[0], clear[1], clear[2], 1.0f);
  // The kept pixels are the display's, one to one, at the size they were drawn at.
  const bool one_to_one = dd->FramebufferScale.x == 1 && dd->FramebufferScale.y == 1 &&
                          dd->DisplayPos.x == 0 && dd->DisplayPos.y == 0;
  const bool kept =
      retain && one_to_one && fb_width == width_ && fb_height == height_ && SameLayout(now, last_);
  std::vector<ImDrawList*> lists;
  if (!kept) {
    glClear(GL_COLOR_BUFFER_BIT);
    lists.assign(dd->CmdLists, dd->CmdLists + dd->CmdListsCount);
    drawn_windows_ = windows_;
  } else {
    drawn_windows_ = 0;
    glEnable(GL_SCISSOR_TEST);
    for (size_t i = 0; i < now.size(); ++i) {
      if (now[i].bytes == last_[i].bytes) continue;
      const ImVec4& r = now[i].rect;
      glScissor(static_cast<GLint>(r.x), fb_height - static_cast<GLint>(r.w),
                static_cast<GLsizei>(r.z - r.x), static_cast<GLsizei>(r.w - r.y));
      glClear(GL_COLOR_BUFFER_BIT);
      for (const ImDrawList* l : now[i].lists) lists.push_back(const_cast<ImDrawList*>(l));
      ++drawn_windows_;
    }
    glDisable(GL_SCISSOR_TEST);
  }
  Draw(*dd, lists);
  if (retain && one_to_one) {
    width_ = fb_width;
    height_ = fb_height;
    last_ = std::move(now);
  } else {
    width_ = height_ = 0;
    last_.clear();
  }
}

}  // namespace shardscope::viewer
