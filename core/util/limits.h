// Bounds on what any input may expand into, so that no file makes the tool use more than a few
// GiB or run for minutes without saying why. Each limit has a default and an environment
// variable that raises (or lowers) it for a job that really is that large.
//
// Contents:
//   Limit              the bounded quantities: input bytes, modules, parameters, schedule ops
//   LimitValue         the value in force: the environment variable when set, else the default
//   LimitVariable      the environment variable that sets a limit
//   CheckLimit         InvalidInput naming the source, the limit and how to raise it
//   CheckLimitVariables  InvalidInput when a limit's variable is set to anything but a
//                      positive integer (programs call it first: a typo must not silently
//                      leave the default in force)
#pragma once

#include <cstdint>
#include <string>

#include "core/util/status.h"

namespace shardscope {

enum class Limit {
  kInputBytes,   // one input file, after decompression (default 2 GiB)
  kModules,      // modules of one model tree (default 2^20)
  kParams,       // parameter entries of one model tree (default 2^21)
  kScheduleOps,  // operations of one step's schedule, all roles (default 2^22)
};

// The default unless the limit's variable (SHARDSCOPE_MAX_INPUT_BYTES, SHARDSCOPE_MAX_MODULES,
// SHARDSCOPE_MAX_PARAMS, SHARDSCOPE_MAX_SCHEDULE_OPS) holds a positive integer.
int64_t LimitValue(Limit limit);
const char* LimitVariable(Limit limit);
Status CheckLimitVariables();

// Ok when `count` <= LimitValue(limit); else InvalidInput:
//   "<source>: 3000000 modules, more than the limit of 1048576 (set SHARDSCOPE_MAX_MODULES
//    to raise it)"
Status CheckLimit(Limit limit, int64_t count, const std::string& source);

}  // namespace shardscope
