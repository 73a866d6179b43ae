// The memory band's stacked fill as rectangles: each category's area and the band above the
// stack, every pixel once. A software renderer pays for a one-pixel-wide column as for a block
// of columns (it shades pixels in 4x4 blocks, and per triangle), and at full zoom-out nearly
// every column shows another sample; so within each chunk of columns the part of a layer that
// all its columns share is one wide rectangle, and only what rises or falls past it is drawn
// column by column.
//
// Contents:
//   MemoryFillRect   one rectangle of a layer (a category, or the band above the stack)
//   kMemoryBandLayer the layer index of the band above the stack
//   MemoryFill       MemoryModel × its downsampled columns × the band's geometry → rectangles
#pragma once

#include <vector>

#include "viewer/memory_model.h"

namespace shardscope::viewer {

inline constexpr int kMemoryBandLayer = -1;

struct MemoryFillRect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // screen pixels, y down; x0 < x1, y0 < y1
  int layer = kMemoryBandLayer;          // index into MemoryModel::categories, or the band
};

// The band spans [x0, x1) × [y0, y1) on screen, `cols` one per pixel column from x0 (the last
// takes the sub-pixel rest up to x1), the stack grows up from y1 at `px_per_byte`, cut at y0.
std::vector<MemoryFillRect> MemoryFill(const MemoryModel& m, const std::vector<MemoryColumn>& cols,
                                       float x0, float x1, float y0, float y1, double px_per_byte);

}  // namespace shardscope::viewer
