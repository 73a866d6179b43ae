// The frame kept between frames, so that a window whose draw lists did not change since the
// last frame is not drawn again. A software renderer pays for every glyph and pixel it shades,
// and most frames change one or two windows (the timeline and memory plots when the view
// moves; nothing at all when it holds still), while the table, the summary and the tuning
// panel cost as much as the plots. A window that changed has its rectangle cleared and its
// draw lists drawn again; the others keep their pixels in the back buffer.
//
// That needs a back buffer that keeps its pixels across the swap. Mesa's software rasterisers
// (llvmpipe, softpipe: Xvfb, no GPU) present by copying the back buffer into the window and
// leave it as it was; a GPU's swap chain may hand back an older buffer, and a GPU draws the
// whole frame in a fraction of a millisecond anyway: there the caller draws every frame whole
// (`retain` false). Copying an offscreen image to the window instead would not need it, but
// llvmpipe's framebuffer blit to the window is a textured draw of every pixel (10 ms at
// 1600x1000, measured), dearer than the frame it would save.
//
// Contents:
//   RetainedFrame          the last frame's draw lists, per top-level window
//   RetainedFrame::Render  draws a frame's ImDrawData (all of it, or the windows that changed)
//   RetainedFrame::Invalidate  the next Render draws everything (the window was exposed)
//   RetainsPixels          whether the current GL context keeps its back buffer across a swap
//
// Everything is drawn again when the framebuffer's size changes, when the windows or their
// places differ from the last frame, or when two windows overlap (a tooltip, a popup): a
// window drawn again would otherwise paint over what lies on top of it. Whether a window
// changed is decided by comparing its draw lists' vertices, indices and commands (clip
// rectangles, textures, callbacks) with the last frame's, byte for byte.
#pragma once

#include <imgui.h>

#include <functional>
#include <string>
#include <vector>

namespace shardscope::viewer {

class RetainedFrame {
 public:
  // Draws `dd` at `fb_width` × `fb_height` over `clear` (RGB) into the back buffer. With
  // `retain` false every window is drawn (and nothing is kept).
  void Render(ImDrawData* dd, int fb_width, int fb_height, const float clear[3], bool retain);
  // The next Render draws every window: the window system lost pixels (an expose).
  void Invalidate() { width_ = height_ = 0; }
  // Top-level windows drawn by the last Render, and how many there were.
  int drawn_windows() const { return drawn_windows_; }
  int windows() const { return windows_; }

  // A top-level window's draw lists (the window's and its children's) as they were drawn.
  struct Window {
    std::string name;
    ImVec4 rect;  // x0, y0, x1, y1 in display pixels
    std::vector<const ImDrawList*> lists;
    std::vector<char> bytes;  // vertices, indices and command fields of every list, in order
  };

 private:
  int width_ = 0, height_ = 0;
  std::vector<Window> last_;
  int drawn_windows_ = 0, windows_ = 0;
};

// True when the current context is Mesa's llvmpipe or softpipe (GL_RENDERER) and its back
// buffer kept a probe colour through `swap`: the renderer's name alone does not say how the
// window system presents (a copy leaves the back buffer; a chain of buffers hands back another).
// Leaves the back buffer cleared.
bool RetainsPixels(const std::function<void()>& swap);

}  // namespace shardscope::viewer
