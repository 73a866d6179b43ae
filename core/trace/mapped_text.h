// A trace file's text mapped read-only into memory (internal to core/trace): a 150 MB trace read
// into a string is zero-filled, then copied from the page cache, both at the reader's expense;
// mapped, its pages are the page cache's own.
//
// Contents:
//   MappedText   maps a regular, non-empty file within the input limit; else maps nothing
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shardscope::trace_internal {

class MappedText {
 public:
  // Maps `path` when it is a regular file of 1 to LimitValue(kInputBytes) bytes that opens
  // and maps; otherwise mapped() is false and the caller reads it the ordinary way (ReadFile),
  // whose errors name what is wrong.
  explicit MappedText(const std::string& path);
  ~MappedText();
  MappedText(const MappedText&) = delete;
  MappedText& operator=(const MappedText&) = delete;

  bool mapped() const { return data_ != nullptr; }
  std::string_view text() const { return {data_, size_}; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace shardscope::trace_internal
