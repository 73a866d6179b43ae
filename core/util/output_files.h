// Writing what a command produces, so that nothing a user wrote is lost.
//
// Contents:
//   CheckOutputPath    an output option's path, checked before the work that fills it
//   CheckDistinctFiles outputs that would overwrite each other or one of the inputs
//   CheckDistinctInputs inputs given twice (their contents would count twice)
//   CheckOutputs       both, for a command's outputs (those given) and inputs
//   WriteFilesAtomic   several outputs, all or none: each to a temporary name, then renamed
//   WriteFileAtomic    one output
//
// Targets that are not regular files are written in place instead of replaced: a device
// (`/dev/null`), a FIFO, or any path under /dev or /proc (`/dev/stdout`, the process's own
// descriptor, also when it points to a regular file), appended after what it holds; a rename
// would put a regular file where the device was, or replace a redirected stdout's text. A symlink
// to a regular file keeps the link: its target is replaced. A write error (ENOSPC from `/dev/full`)
// is an error.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

// The path given to output option `flag` ("--csv"), checked before any work: not empty, not
// a directory, and in a folder that exists and can be written. Exit 2 errors naming both.
Status CheckOutputPath(std::string_view flag, const std::string& path);

// One file a command names: what names it (a flag, "scenario") and its path.
struct NamedPath {
  std::string what;
  std::string path;
};

// Exit 2 when two outputs are one file, or an output is one of the inputs (the same file by
// device and inode when it exists, by its absolute path with symlinks resolved otherwise).
// Empty paths are skipped (an option not given).
Status CheckDistinctFiles(const std::vector<NamedPath>& outputs,
                          const std::vector<NamedPath>& inputs);

// Exit 2 when two of `inputs` are one file (by the rule above): a file read twice would count
// its contents twice. Devices and FIFOs are not compared. Empty paths are skipped.
Status CheckDistinctInputs(const std::vector<NamedPath>& inputs);

// CheckOutputPath for each output given (a non-empty path; an empty one is an option left out),
// then CheckDistinctFiles: what a command calls before its work.
Status CheckOutputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

// Writes every (path, contents): all to temporary names in their folders first, then renamed
// over the targets, so an error leaves every previous file as it was (a name ending in `.gz`
// gets gzip data, what ReadFile reads). Runtime errors (exit 3) name the path.
Status WriteFilesAtomic(const std::vector<std::pair<std::string, std::string>>& files);

Status WriteFileAtomic(const std::string& path, const std::string& text);

}  // namespace shardscope
