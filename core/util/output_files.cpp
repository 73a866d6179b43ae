#include "core/util/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

namespace shardscope {
namespace {

namespace fs = std::filesystem;

std::string Errno() { return std::strerror(errno); }

// Which file a path names, to tell two names of one file apart from two files.
struct FileKey {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string absolute;
};

// Where the chain of symlinks at `path` ends, whether or not that file exists yet (a dangling
// link names the file a write creates); `path` itself when it is no link. A loop stops after as
// many hops as the system follows (the write then fails and says so).
fs::path FinalTarget(const fs::path& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec)) || ec) return p;
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) return p;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  return p;
}

// nullopt for what is not a regular file: a device (/dev/null, /dev/stdout) can take every
// output, it keeps none of them, and reading one twice reads two different streams.
std::optional<FileKey> KeyOf(const std::string& path) {
  FileKey k;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return std::nullopt;
    k.exists = true;
    k.dev = st.st_dev;
    k.ino = st.st_ino;
  }
  std::error_code ec;
  k.absolute =
      fs::weakly_canonical(fs::absolute(FinalTarget(path), ec), ec).lexically_normal().string();
  return k;
}

// The same file by device and inode when both exist, else by absolute path.
bool Same(const FileKey& a, const FileKey& b) {
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return a.absolute == b.absolute;
}

// The first of `paths` that names the same file as an earlier one: "<what> <path>: the same
// file as <what> <path> (<why>)". Empty paths (options not given) are skipped.
Status NoRepeats(const std::vector<NamedPath>& paths, const std::string& why) {
  std::vector<std::pair<const NamedPath*, FileKey>> seen;
  for (const NamedPath& p : paths) {
    if (p.path.empty()) continue;
    const std::optional<FileKey> k = KeyOf(p.path);
    if (!k) continue;
    for (const auto& [other, ko] : seen) {
      if (Same(*k, ko)) {
        return InvalidInput(p.what + " " + p.path + ": the same file as " + other->what + " " +
                            other->path + " (" + why + ")");
      }
    }
    seen.emplace_back(&p, *k);
  }
  return Status::Ok();
}

// gzip framing (deflate with a gzip header and trailer), what `gzip -d` and ReadFile read.
Result<std::string> Gzip(const std::string& path, const std::string& data) {
  if (data.size() > 0xffffffffu) return RuntimeError(path + ": too large to gzip in one piece");
  z_stream z{};
  constexpr int kGzipWindowBits = 15 + 16;  // 16 asks deflate for the gzip wrapper
  if (deflateInit2(&z, 6, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return RuntimeError(path + ": cannot start gzip compression");
  }
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return RuntimeError(path + ": gzip compression failed");
  return out;
}

// Writes all of `data` to the open descriptor `fd`; the message names `path`.
Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return RuntimeError(path + ": write failed (" + Errno() + ")");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteTo(const std::string& path, const std::string& data, int flags,
               const std::string& name) {
  const int fd = ::open(path.c_str(), flags, 0666);
  if (fd < 0) return RuntimeError(name + ": cannot write (" + Errno() + ")");
  Status s = WriteAll(fd, data, name);
  if (::close(fd) != 0 && s.ok()) s = RuntimeError(name + ": write failed (" + Errno() + ")");
  return s;
}

// Where a write to `path` lands: a regular file (replaced through a temporary) or something
// written in place.
struct Target {
  std::string path;  // the file renamed over: `path`, or a symlink's final target
  bool in_place = false;
};

// A process's own descriptors (/dev/stdout, /dev/fd/1, /proc/self/fd/1) and devices: written
// where they point, never renamed over. `--summary /dev/stdout > out.txt` resolves to out.txt,
// a regular file, and replacing it lost the text output.
bool SystemPath(const std::string& path) {
  return path.starts_with("/dev/") || path.starts_with("/proc/");
}

Target TargetOf(const std::string& path) {
  struct stat st {};
  // New: where a dangling link points (the link is kept and its file made), else `path`.
  if (::stat(path.c_str(), &st) != 0) return {FinalTarget(path).string(), false};
  if (!S_ISREG(st.st_mode) || SystemPath(path)) return {path, true};
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    std::error_code ec;
    const fs::path real = fs::canonical(path, ec);
    if (!ec) return {real.string(), false};
  }
  return {path, false};
}

}  // namespace

Status CheckOutputPath(std::string_view flag, const std::string& path) {
  const std::string name = std::string(flag) + " " + path;
  if (path.empty()) return InvalidInput(std::string(flag) + ": empty path (expected a file name)");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return InvalidInput(name + ": is a directory (expected a file name)");
    // A device or a descriptor of ours, written in place.
    if (!S_ISREG(st.st_mode) || SystemPath(path)) return Status::Ok();
  }
  std::error_code ec;
  // A symlink is written through to its target (TargetOf), dangling or not: the target's
  // folder takes the file.
  fs::path target = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    const fs::path real = fs::weakly_canonical(FinalTarget(path), ec);
    target = ec ? FinalTarget(path) : real;
    ec.clear();
  }
  fs::path folder = target.parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::exists(folder, ec)) {
    return InvalidInput(name + ": the folder '" + folder.string() + "' does not exist");
  }
  if (!fs::is_directory(folder, ec)) {
    return InvalidInput(name + ": '" + folder.string() + "' is not a folder");
  }
  // A file made and removed where the output's temporary will be, not access(2): access
  // answers yes to root for any folder, and for one on a file system that refuses new files
  // (/proc, /sys, a read-only mount), so the work ran and its write failed at the end.
  std::string probe = (folder / ".shardscope-probe.XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    return InvalidInput(name + ": the folder '" + folder.string() + "' is not writable (" +
                        Errno() + ")");
  }
  ::close(fd);
  std::remove(probe.c_str());
  return Status::Ok();
}

Status CheckDistinctFiles(const std::vector<NamedPath>& outputs,
                          const std::vector<NamedPath>& inputs) {
  std::vector<std::pair<const NamedPath*, FileKey>> input_keys;
  for (const NamedPath& in : inputs) {
    if (in.path.empty()) continue;
    if (const std::optional<FileKey> k = KeyOf(in.path)) input_keys.emplace_back(&in, *k);
  }
  for (const NamedPath& out : outputs) {
    if (out.path.empty()) continue;
    const std::optional<FileKey> k = KeyOf(out.path);
    if (!k) continue;
    for (const auto& [in, ki] : input_keys) {
      if (Same(*k, ki)) {
        return InvalidInput(out.what + " " + out.path + ": is the " + in->what + " " + in->path +
                            " (an output would overwrite an input)");
      }
    }
  }
  return NoRepeats(outputs, "one output would overwrite the other");
}

Status CheckDistinctInputs(const std::vector<NamedPath>& inputs) {
  return NoRepeats(inputs, "it would be read twice");
}

Status CheckOutputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  for (const NamedPath& out : outputs) {
    if (!out.path.empty()) SS_RETURN_IF_ERROR(CheckOutputPath(out.what, out.path));
  }
  return CheckDistinctFiles(outputs, inputs);
}

Status WriteFilesAtomic(const std::vector<std::pair<std::string, std::string>>& files) {
  struct Staged {
    const std::string* name;  // as the user gave it, for messages
    Target target;
    std::string tmp;
    std::string gz;  // the gzip data of a `.gz` name
  };
  std::vector<Staged> staged;
  auto drop = [&] {
    for (const Staged& s : staged) {
      if (!s.tmp.empty()) std::remove(s.tmp.c_str());
    }
  };
  for (const auto& [path, text] : files) {
    Staged s{&path, TargetOf(path), "", ""};
    if (path.ends_with(".gz")) {
      Result<std::string> gz = Gzip(path, text);
      if (!gz.ok()) {
        drop();
        return gz.status();
      }
      s.gz = std::move(gz).value();
    }
    staged.push_back(std::move(s));
    Staged& last = staged.back();
    if (last.target.in_place) continue;
    last.tmp = last.target.path + ".tmp." + std::to_string(::getpid());
    // The temporary name is ours, not the user's: errors name the output they asked for.
    if (Status w = WriteTo(last.tmp, path.ends_with(".gz") ? last.gz : text,
                           O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, path);
        !w.ok()) {
      drop();
      return w;
    }
  }
  // Devices and pipes take their data once every temporary is ready: an error before that
  // writes nothing anywhere.
  for (size_t i = 0; i < staged.size(); ++i) {
    const Staged& s = staged[i];
    if (!s.target.in_place) continue;
    const std::string& data = s.name->ends_with(".gz") ? s.gz : files[i].second;
    // After what the command printed (stdout redirected to the same file), at the end of a
    // regular file a descriptor points to, never over its beginning.
    std::fflush(nullptr);
    if (Status w = WriteTo(s.target.path, data, O_WRONLY | O_APPEND | O_CLOEXEC, *s.name);
        !w.ok()) {
      drop();
      return w;
    }
  }
  for (size_t i = 0; i < staged.size(); ++i) {
    Staged& s = staged[i];
    if (s.target.in_place) continue;
    if (std::rename(s.tmp.c_str(), s.target.path.c_str()) != 0) {
      const std::string why = Errno();
      for (size_t j = i; j < staged.size(); ++j) {
        if (!staged[j].tmp.empty()) std::remove(staged[j].tmp.c_str());
      }
      return RuntimeError(*s.name + ": cannot write (" + why + ")");
    }
    s.tmp.clear();
  }
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, const std::string& text) {
  return WriteFilesAtomic({{path, text}});
}

}  // namespace shardscope
