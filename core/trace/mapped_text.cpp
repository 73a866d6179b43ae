#include "core/trace/mapped_text.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

#include "core/util/limits.h"

namespace shardscope::trace_internal {

MappedText::MappedText(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      static_cast<int64_t>(st.st_size) <= LimitValue(Limit::kInputBytes)) {
    const size_t size = static_cast<size_t>(st.st_size);
    // Populated at once: one call maps every page instead of a fault each few of them.
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (p != MAP_FAILED) {
      ::madvise(p, size, MADV_SEQUENTIAL);
      data_ = static_cast<const char*>(p);
      size_ = size;
    }
  }
  ::close(fd);
}

MappedText::~MappedText() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

}  // namespace shardscope::trace_internal
