// The launched world against the scenario's: `mpirun -np N` must start exactly the plan's
// world size (one process per rank), unless `--emulate-world` runs one rank of a larger plan
// in a single process. Launch detection itself is backend/launch.h (environment only).
//
// Contents:
//   CheckLaunchedWorld  InvalidInput naming both numbers when they differ
#pragma once

#include "backend/launch.h"
#include "core/util/status.h"

namespace shardscope::backend {

// `emulate_world` <= 0: no emulation.
Status CheckLaunchedWorld(const LaunchInfo& launch, int scenario_world_size, int emulate_world);

}  // namespace shardscope::backend
