#include "sim/calibrate/calibrate.h"

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "sim/calibrate/free_figures.h"
#include "sim/calibrate/least_squares.h"
#include "sim/calibrate/sample.h"

namespace shardscope::calibrate {
namespace {

// The ns added to both sides of an observation's ratio (calibrate.h): operations only.
double TimingFloor(const Observation& o, const CalibrateOptions& options) {
  if (!o.op_duration) return 0;
  return options.timing_floor_ns >= 0 ? options.timing_floor_ns : o.jitter_ns;
}

// One GPU type's part of the inputs, and how to predict any subset of its observations.
class GpuFit {
 public:
  GpuFit(const PreparedInputs& in, std::vector<int> samples, const CalibrateOptions& options)
      : in_(in), samples_(std::move(samples)), options_(options) {
    bool traces = false;
    for (int s : samples_) traces = traces || in_.samples[s].figure == Sample::Figure::kOpDuration;
    const Sample& first = in_.samples[samples_.front()];
    set_ = ComputeFigures(first.defaults, /*collective_scales=*/!traces);
    for (int s : samples_) {
      for (const auto& [shape, bytes] : in_.samples[s].observed_shapes) {
        AddShapeFigures(shape, bytes, first.hw, first.defaults, &set_);
      }
    }
    for (int s : samples_) {
      for (int o : in_.samples[s].observations) observations_.push_back(o);
    }
  }

  const FigureSet& set() const { return set_; }

  // The inputs of this fit, for messages: the first few, then how many more.
  std::string Sources() const {
    constexpr size_t kShown = 3;
    std::string out;
    for (size_t i = 0; i < samples_.size() && i < kShown; ++i) {
      out += (i == 0 ? "" : ", ") + in_.samples[samples_[i]].source;
    }
    if (samples_.size() > kShown) out += fmt::format(" and {} more", samples_.size() - kShown);
    return out;
  }
  const std::vector<int>& observations() const { return observations_; }

  // Predicted values of `obs` with the figures `active` at `z` (active empty and `defaults`:
  // the catalog model itself).
  Result<std::vector<double>> Predict(const std::vector<double>& z, const std::vector<int>& active,
                                      const std::vector<int>& obs, bool defaults) const {
    std::vector<char> wanted(in_.observations.size(), 0);
    for (int o : obs) wanted[o] = 1;
    std::vector<int> needed;  // the samples with an observation wanted
    for (int s : samples_) {
      for (int o : in_.samples[s].observations) {
        if (wanted[o]) {
          needed.push_back(s);
          break;
        }
      }
    }
    // Each prediction once: a repeat of an earlier sample (Sample::same_as) takes its values.
    auto predictor = [this](int s) {
      const int same = in_.samples[static_cast<size_t>(s)].same_as;
      return same >= 0 ? same : s;
    };
    std::vector<int> run;
    std::map<int, size_t> slot;  // predicting sample → its index in `run`
    for (int s : needed) {
      if (slot.emplace(predictor(s), run.size()).second) run.push_back(predictor(s));
    }
    std::vector<Result<std::vector<double>>> got(run.size(), std::vector<double>());
    tbb::parallel_for(size_t{0}, run.size(), [&](size_t i) {
      const Sample& s = in_.samples[run[i]];
      const CostParams p = defaults ? s.defaults : ApplyFigures(set_, z, active, s.defaults);
      got[i] = s.Predict(p);
    });
    std::vector<double> by_obs(in_.observations.size(), 0.0);
    for (int n : needed) {
      const Result<std::vector<double>>& values = got[slot.at(predictor(n))];
      if (!values.ok())
        return values.status().WithContext(in_.samples[run[slot.at(predictor(n))]].source);
      const Sample& s = in_.samples[static_cast<size_t>(n)];
      for (size_t k = 0; k < s.observations.size(); ++k) by_obs[s.observations[k]] = (*values)[k];
    }
    std::vector<double> out;
    for (int o : obs) out.push_back(by_obs[o]);
    return out;
  }

  // Residuals log(pred / measured) / sd of `obs`; an operation's with its timing floor added
  // to both (calibrate.h).
  Result<Eigen::VectorXd> Residuals(const std::vector<double>& z, const std::vector<int>& active,
                                    const std::vector<int>& obs) const {
    SS_ASSIGN_OR_RETURN(std::vector<double> pred, Predict(z, active, obs, false));
    Eigen::VectorXd r(obs.size());
    for (size_t i = 0; i < obs.size(); ++i) {
      const Observation& o = in_.observations[obs[i]];
      const double floor = TimingFloor(o, options_);
      r[i] = o.weight * std::log((std::max(pred[i], 1e-30) + floor) / (o.measured + floor)) /
             options_.residual_sd;
    }
    return r;
  }

  // Fits `active` to `obs`; returns z (full length) and the result over the active figures.
  // `residual_scale` > 0: the residuals' spread measured already, in units of residual_sd
  // (cross-validation folds take the whole fit's); 0: measured by this fit (scale_to_misfit).
  Result<LeastSquaresResult> Fit(const std::vector<int>& active, const std::vector<int>& obs,
                                 std::vector<double>* z_full, double residual_scale = 0) const {
    const std::vector<double> z0 = set_.DefaultZ();
    const int n = static_cast<int>(active.size());
    LeastSquaresProblem p;
    p.prior.resize(n);
    p.prior_sd.resize(n);
    p.lo.resize(n);
    p.hi.resize(n);
    for (int i = 0; i < n; ++i) {
      const FreeFigure& f = set_.figures[active[i]];
      p.prior[i] = z0[active[i]];
      p.prior_sd[i] = f.prior_sd;
      p.lo[i] = f.ZLo();
      p.hi[i] = f.ZHi();
    }
    p.scale_to_misfit = residual_scale <= 0;
    p.residual_scale = std::max(residual_scale, 1.0);
    p.residuals = [&](const Eigen::VectorXd& sub) -> Result<Eigen::VectorXd> {
      std::vector<double> z = z0;
      for (int i = 0; i < n; ++i) z[active[i]] = sub[i];
      return Residuals(z, active, obs);
    };
    SS_ASSIGN_OR_RETURN(LeastSquaresResult r, SolveLeastSquares(p));
    *z_full = z0;
    for (int i = 0; i < n; ++i) (*z_full)[active[i]] = r.z[i];
    return r;
  }

 private:
  const PreparedInputs& in_;
  std::vector<int> samples_;
  CalibrateOptions options_;
  FigureSet set_;
  std::vector<int> observations_;
};

ErrorStats Errors(const std::vector<double>& pred, const std::vector<double>& measured) {
  std::vector<double> e;
  for (size_t i = 0; i < pred.size(); ++i) e.push_back(std::abs(pred[i] / measured[i] - 1.0));
  ErrorStats s;
  s.count = static_cast<int>(e.size());
  if (e.empty()) return s;
  std::sort(e.begin(), e.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(e.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, e.size() - 1);
    return e[lo] + (e[hi] - e[lo]) * (pos - static_cast<double>(lo));
  };
  s.median = at(0.5);
  s.p90 = at(0.9);
  return s;
}

std::vector<double> MeasuredOf(const PreparedInputs& in, const std::vector<int>& obs) {
  std::vector<double> m;
  for (int o : obs) m.push_back(in.observations[o].measured);
  return m;
}

Result<GpuCalibration> FitGpu(const PreparedInputs& in, const std::string& gpu,
                              std::vector<int> samples, const CalibrateOptions& options) {
  GpuFit fit(in, std::move(samples), options);
  const FigureSet& set = fit.set();
  const std::vector<int>& obs = fit.observations();
  GpuCalibration g;
  g.gpu = gpu;
  g.observations = static_cast<int>(obs.size());
  for (int o : obs)
    g.timing_floor_ns = std::max(g.timing_floor_ns, TimingFloor(in.observations[o], options));
  const std::vector<double> measured = MeasuredOf(in, obs);

  // Which figures the inputs inform: the Jacobian at the defaults, every figure active.
  std::vector<int> all(set.figures.size());
  std::iota(all.begin(), all.end(), 0);
  const std::vector<double> z0 = set.DefaultZ();
  Eigen::VectorXd z0v = Eigen::Map<const Eigen::VectorXd>(z0.data(), z0.size());
  ResidualFn full = [&](const Eigen::VectorXd& z) -> Result<Eigen::VectorXd> {
    return fit.Residuals(std::vector<double>(z.data(), z.data() + z.size()), all, obs);
  };
  SS_ASSIGN_OR_RETURN(Eigen::VectorXd r0, full(z0v));
  SS_ASSIGN_OR_RETURN(Eigen::MatrixXd j0, NumericJacobian(full, z0v, r0, 1e-2));
  std::vector<int> active;
  for (int i : all) {
    const double info = j0.col(i).squaredNorm();
    const double prior_info = 1.0 / (set.figures[i].prior_sd * set.figures[i].prior_sd);
    if (info >= 0.01 * prior_info) active.push_back(i);
  }
  if (active.empty()) {
    return InvalidInput(fmt::format(
        "calibrate: {}: no free figure of the cost model changes the predicted observations of "
        "{} (are these the scenarios that were measured?)",
        gpu, fit.Sources()));
  }

  std::vector<double> z_fit;
  SS_ASSIGN_OR_RETURN(LeastSquaresResult res, fit.Fit(active, obs, &z_fit));
  SS_ASSIGN_OR_RETURN(std::vector<double> before, fit.Predict(z0, {}, obs, true));
  SS_ASSIGN_OR_RETURN(std::vector<double> after, fit.Predict(z_fit, active, obs, false));
  g.residual_spread = options.residual_sd * res.noise_scale;
  g.spread_from_misfit = res.noise_scale > 1;
  g.fit_before = Errors(before, measured);
  g.fit_after = Errors(after, measured);
  g.not_improved = g.fit_after.median >= g.fit_before.median;
  for (size_t i = 0; i < set.figures.size(); ++i) {
    const FreeFigure& f = set.figures[i];
    FittedFigure ff;
    ff.key = f.key;
    ff.default_value = f.default_value;
    ff.value = f.default_value;
    const auto at = std::find(active.begin(), active.end(), static_cast<int>(i));
    if (at != active.end()) {
      const int k = static_cast<int>(at - active.begin());
      ff.identified = true;
      ff.value = f.ToValue(z_fit[i]);
      // value = offset + exp(z): d value = (value - offset) dz.
      ff.sd = (ff.value - f.offset) * std::sqrt(std::max(0.0, res.covariance(k, k)));
      // Within 1% of a bound's value (an efficiency of 0.992 against its bound 1 is the bound
      // the inputs pushed it to, not a measurement), at the residuals' stated spread: inputs
      // weighed by a wide scatter may stop short of the bound they pull to.
      const auto bound_at = [&f](double v) -> std::string {
        if (v <= f.lo * 1.01) return "lower";
        if (v >= f.hi * 0.99) return "upper";
        return "";
      };
      const std::string at_value = bound_at(ff.value);
      ff.value_at_bound = !at_value.empty();
      ff.at_bound = ff.value_at_bound ? at_value : bound_at(f.ToValue(res.z_stated[k]));
    }
    g.figures.push_back(ff);
  }

  // k-fold cross-validation over the observations' groups.
  std::vector<int> groups;
  for (int o : obs) groups.push_back(in.observations[o].group);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  g.folds = std::min<int>(options.folds, static_cast<int>(groups.size()));
  if (g.folds >= 2) {
    std::mt19937 rng(20261201);
    std::shuffle(groups.begin(), groups.end(), rng);
    std::map<int, int> fold_of;
    for (size_t i = 0; i < groups.size(); ++i) fold_of[groups[i]] = static_cast<int>(i) % g.folds;
    std::vector<double> held_pred, held_before, held_measured;
    for (int f = 0; f < g.folds; ++f) {
      std::vector<int> train, test;
      for (int o : obs) (fold_of[in.observations[o].group] == f ? test : train).push_back(o);
      std::vector<double> z_f;
      SS_ASSIGN_OR_RETURN(LeastSquaresResult r_f, fit.Fit(active, train, &z_f, res.noise_scale));
      (void)r_f;
      SS_ASSIGN_OR_RETURN(std::vector<double> p_after, fit.Predict(z_f, active, test, false));
      SS_ASSIGN_OR_RETURN(std::vector<double> p_before, fit.Predict(z0, {}, test, true));
      for (size_t i = 0; i < test.size(); ++i) {
        held_pred.push_back(p_after[i]);
        held_before.push_back(p_before[i]);
        held_measured.push_back(in.observations[test[i]].measured);
      }
    }
    g.cv_before = Errors(held_before, held_measured);
    g.cv_after = Errors(held_pred, held_measured);
    g.worse = g.cv_after.median > g.cv_before.median;
  }

  nlohmann::json j = FiguresToJson(set, z_fit, active);
  // Its figures are this GPU's: a scenario of another GPU refuses the file (calibration.h).
  j["fitted_on"] = gpu;
  j["notes"] = fmt::format(
      "shardscope calibrate: {} for {} from {} observations; {}", "least-squares fit", gpu,
      g.observations,
      g.folds >= 2 ? fmt::format("{}-fold held-out median error {:.2f}% -> {:.2f}%", g.folds,
                                 100 * g.cv_before.median, 100 * g.cv_after.median)
                   : std::string("too few observation groups to cross-validate"));
  SS_ASSIGN_OR_RETURN(g.calibration, ParseCalibration(j.dump(), "calibrate output"));
  return g;
}

}  // namespace

Result<CalibrateReport> Calibrate(const CalibrationInputs& inputs,
                                  const CalibrateOptions& options) {
  SS_ASSIGN_OR_RETURN(PreparedInputs in, PrepareSamples(inputs));
  CalibrateReport report;
  report.notes = in.notes;
  std::map<std::string, std::vector<int>> by_gpu;
  for (size_t s = 0; s < in.samples.size(); ++s) {
    by_gpu[in.samples[s].gpu].push_back(static_cast<int>(s));
  }
  for (auto& [gpu, samples] : by_gpu) {
    SS_ASSIGN_OR_RETURN(GpuCalibration g, FitGpu(in, gpu, samples, options));
    g.samples = static_cast<int>(samples.size());
    report.gpus.push_back(std::move(g));
  }
  return report;
}

}  // namespace shardscope::calibrate
