// `calibrate`: fits the cost model's free figures (free_figures.h) to measured traces and run
// tables (calibration_inputs.h), per GPU type, and says how much better the fitted model
// predicts what it was not fitted on.
//
// Contents:
//   CalibrateOptions  folds, the residuals' assumed spread
//   FittedFigure      one figure: default, fitted value, its standard deviation
//   GpuCalibration    the fit of one GPU type: figures, cross-validated errors, the file
//   CalibrateReport   every GPU's fit + notes on the inputs
//   Calibrate         inputs → report
//
// Residuals are log(predicted / measured) over `residual_sd` (a 5% spread by default), so an
// operation of 10 µs and a step of 2 s weigh alike. An operation's duration also carries an
// absolute jitter that no cost figure explains (a shared host's time slices, MPI polling): its
// residual is log((predicted + floor) / (measured + floor)) with floor the catalog's
// `timing_jitter_us` of its device (or `timing_floor_ns`), relative above the floor and
// absolute below it, so that a copy measured at 1 µs and priced at 20 µs does not outweigh the
// millisecond operations the step is made of. Each figure's prior (free_figures.h)
// regularises towards the catalog default. Residuals that scatter more than `residual_sd` are
// weighed by the spread they show (least_squares.h, scale_to_misfit): a CPU run's operations
// scatter by tens of percent from one rank and step to the next, and weighed at 5% they
// outweighed every prior, so a fixed cost against a per-FLOP cost (which one scenario's
// operations barely tell apart) was settled by the noise. A figure the inputs do not inform (its
// Jacobian column carries less than 1% of its prior's information) is left at its default and out
// of the file. Cross-validation: the observations' groups (operations, run rows) are dealt into
// `folds` folds in a fixed shuffled order; each fold is predicted by a fit on the others, and
// the median |predicted / measured - 1| over all held-out observations is compared with the
// same error of the catalog defaults ("before").
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"
#include "sim/calibrate/calibration_inputs.h"
#include "sim/cost/calibration.h"

namespace shardscope::calibrate {

struct CalibrateOptions {
  int folds = 5;
  double residual_sd = 0.05;
  // Operations' timing floor (ns) for every device; < 0: each device's catalog
  // `timing_jitter_us` (GpuSpec::timing_jitter_ns).
  double timing_floor_ns = -1;
};

struct FittedFigure {
  std::string key;
  double default_value = 0;
  double value = 0;
  double sd = 0;            // one standard deviation of value (normal equations)
  bool identified = false;  // false: the inputs do not inform it; left at its default
  // The inputs pull the figure to one of its bounds (FreeFigure lo / hi), past what is
  // plausible: the fit stopped there, at the residuals' stated spread or at the spread they
  // show; "" when inside.
  std::string at_bound;  // "", "lower" or "upper"
  // `value` is the bound's, not a measurement (false with at_bound set: the prior, weighed
  // against widely scattered inputs, held it short of the bound they pull to).
  bool value_at_bound = false;
};

struct ErrorStats {
  int count = 0;
  double median = 0;  // of |predicted / measured - 1|
  double p90 = 0;
};

struct GpuCalibration {
  std::string gpu;
  int samples = 0;
  int observations = 0;
  double timing_floor_ns = 0;  // the operations' (0: none, or no operation observed)
  // The residuals' spread the fit weighed them by: residual_sd, or more where they scatter
  // more (log units: 0.3 is about 30%).
  double residual_spread = 0;
  bool spread_from_misfit = false;  // residual_spread is the scatter shown, above residual_sd
  std::vector<FittedFigure> figures;
  ErrorStats fit_before, fit_after;  // on every observation, defaults vs the full fit
  int folds = 0;                     // 0: too few groups to cross-validate
  ErrorStats cv_before, cv_after;    // held-out
  bool worse = false;                // cv_after.median > cv_before.median
  // fit_after.median >= fit_before.median: the fit explains its own inputs no better than the
  // catalog (measurements it cannot move towards, or ones the defaults already predict).
  bool not_improved = false;
  Calibration calibration;  // what `--out` writes
};

struct CalibrateReport {
  std::vector<GpuCalibration> gpus;  // by GPU name
  std::vector<std::string> notes;
};

Result<CalibrateReport> Calibrate(const CalibrationInputs& inputs, const CalibrateOptions& options);

}  // namespace shardscope::calibrate
