#include "viewer/predict_adapter.h"

#include "sim/engine/trace_export.h"

namespace shardscope::viewer {

Trace PredictedTrace(const sim::Simulation& sim) {
  return sim::MakePredictedTrace(sim, "shardscope viewer");
}

}  // namespace shardscope::viewer
