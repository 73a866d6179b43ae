#include "viewer/predict_adapter.h"

namespace shardscope::viewer {

Trace PredictedTrace(const sim::Simulation& sim) {
  return sim::SimulationTrace(sim, "shardscope viewer");
}

}  // namespace shardscope::viewer
