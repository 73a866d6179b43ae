#include "backend/comm/mpi_launch.h"

#include <fmt/core.h>

namespace shardscope::backend {

Status CheckLaunchedWorld(const LaunchInfo& launch, int scenario_world_size, int emulate_world) {
  if (!launch.launched()) return Status::Ok();
  if (emulate_world > 0) {
    if (launch.world_size != 1) {
      return InvalidInput(fmt::format(
          "{} started {} ranks, but --emulate-world {} runs one rank of the plan in a single "
          "process: start one (-np 1) or run without a launcher",
          launch.launcher, launch.world_size, emulate_world));
    }
    return Status::Ok();
  }
  if (launch.world_size != scenario_world_size) {
    return InvalidInput(fmt::format(
        "{} started {} ranks but the scenario's world size is {}: launch -np {}, or add "
        "--emulate-world {} to run one rank of it in one process",
        launch.launcher, launch.world_size, scenario_world_size, scenario_world_size,
        scenario_world_size));
  }
  return Status::Ok();
}

}  // namespace shardscope::backend
