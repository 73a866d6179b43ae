// One input of a fit, ready to be predicted again and again: the scenario's schedule built
// once, then priced and simulated under any CostParams.
//
// Contents:
//   Observation   one measured figure (an op's duration, a step time, tokens/s) and its group
//   Sample        a prepared trace rank or run row: Predict(params) → one value per observation
//   PrepareSamples  CalibrationInputs → samples + observations (the op_id join happens here)
//
// Observations of a trace are its operations whose (op_id, occurrence) the schedule has;
// each is its own cross-validation group; a one-rank trace whose summary states the step time
// adds it (the idle gaps between operations show only there), weighted as all its operations
// together. A run row gives one observation, its step time
// (tokens/s when only that is given: the same figure inverted), one group per row. Peak
// memory is read but not fitted: no free figure of the cost model moves it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/schedule/schedule.h"
#include "sim/calibrate/calibration_inputs.h"
#include "sim/calibrate/free_figures.h"
#include "sim/cost/cost_params.h"
#include "sim/engine/simulator.h"
#include "sim/hardware/hardware.h"

namespace shardscope::calibrate {

struct Observation {
  int sample = 0;
  std::string label;  // "trace.json rank 0 fwd/model.layers.0/all_gather", "runs.csv id a"
  double measured = 0;
  int group = 0;             // cross-validation unit
  double weight = 1;         // multiplies the residual
  bool op_duration = false;  // an operation's (ns): its residual has a timing floor
  double jitter_ns = 0;      // the device's catalog timing jitter, that floor by default
};

class Sample {
 public:
  std::string gpu;      // catalog name (fits are per GPU)
  std::string source;   // file (and row) for messages
  Hardware hw;          // catalog hardware of the scenario
  CostParams defaults;  // DefaultCostParams (+ cuDNN attention figures when the scenario uses it)
  std::vector<int> observations;  // indices into the observation list, in Predict's order

  // One predicted value per observation (ns for operations, s or tokens/s for runs).
  Result<std::vector<double>> Predict(const CostParams& params) const;

  // Collective shapes of the observed operations and the largest message of each.
  std::vector<std::pair<CollectiveShape, int64_t>> observed_shapes;

  Schedule schedule;
  sim::StepContext ctx;
  std::vector<int> op_index;   // traces: schedule op per observation
  bool step_observed = false;  // traces: the step time follows the operations
  enum class Figure { kOpDuration, kStepTime, kTokensPerS } figure = Figure::kOpDuration;
  // Run tables: an earlier sample of the same scenario and figure (a job measured again), whose
  // prediction this one shares; its schedule is then left empty and never simulated. -1: none.
  int same_as = -1;
};

struct PreparedInputs {
  std::vector<Sample> samples;
  std::vector<Observation> observations;
  std::vector<std::string> notes;  // unmatched operations, memory figures not fitted
};

Result<PreparedInputs> PrepareSamples(const CalibrationInputs& inputs);

}  // namespace shardscope::calibrate
