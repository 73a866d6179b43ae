// The solver under `calibrate`: what scale_to_misfit changes (least_squares.h) and what it
// leaves alone.
#include "sim/calibrate/least_squares.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

namespace shardscope::calibrate {
namespace {

// y = a + x·b measured at x in [0.95, 1.05]: a + b is well determined, a against b barely (as
// a fixed cost against a per-FLOP one measured at one size). Residuals over a stated spread
// `sd`; the measurements scatter by `noise`.
LeastSquaresProblem Line(double noise, double sd, bool scale, std::vector<double>* ys) {
  std::mt19937 rng(11);
  std::normal_distribution<double> n(0.0, noise);
  std::vector<double> xs;
  ys->clear();
  for (int i = 0; i < 200; ++i) {
    const double x = 0.95 + 0.1 * i / 199.0;
    xs.push_back(x);
    ys->push_back(1.0 + 2.0 * x + n(rng));  // truth a = 1, b = 2
  }
  LeastSquaresProblem p;
  p.prior = Eigen::Vector2d(1.0, 2.0);
  p.prior_sd = Eigen::Vector2d(0.7, 0.7);
  p.lo = Eigen::Vector2d(-100, -100);
  p.hi = Eigen::Vector2d(100, 100);
  p.scale_to_misfit = scale;
  const std::vector<double> y = *ys;
  p.residuals = [xs, y, sd](const Eigen::VectorXd& z) -> Result<Eigen::VectorXd> {
    Eigen::VectorXd r(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) r[i] = (z[0] + xs[i] * z[1] - y[i]) / sd;
    return r;
  };
  return p;
}

TEST(LeastSquaresTest, ResidualsWithinTheirStatedSpreadAreNotRescaled) {
  std::vector<double> ys;
  Result<LeastSquaresResult> plain = SolveLeastSquares(Line(0.02, 0.05, false, &ys));
  Result<LeastSquaresResult> scaled = SolveLeastSquares(Line(0.02, 0.05, true, &ys));
  ASSERT_TRUE(plain.ok() && scaled.ok());
  EXPECT_EQ(scaled->noise_scale, 1.0);
  EXPECT_EQ(scaled->z, plain->z);
  EXPECT_EQ(scaled->z_stated, plain->z);
  EXPECT_EQ(scaled->covariance, plain->covariance);
}

TEST(LeastSquaresTest, WidelyScatteredResidualsLeanOnThePrior) {
  std::vector<double> ys;
  // Measurements scattering ten times the stated spread.
  Result<LeastSquaresResult> plain = SolveLeastSquares(Line(0.5, 0.05, false, &ys));
  Result<LeastSquaresResult> scaled = SolveLeastSquares(Line(0.5, 0.05, true, &ys));
  ASSERT_TRUE(plain.ok() && scaled.ok());
  // The scale is the scatter shown, in units of the stated spread.
  EXPECT_NEAR(scaled->noise_scale, 10.0, 1.5);
  // data_cost and the Jacobian stay those of the residuals as given.
  const double s2 = scaled->noise_scale * scaled->noise_scale;
  EXPECT_NEAR(scaled->data_cost / (static_cast<double>(ys.size()) - 2), s2, 0.1 * s2);
  EXPECT_NEAR(scaled->jacobian(0, 0), 1 / 0.05, 1e-3);
  // Both fits keep a + b (what the data determine) ...
  EXPECT_NEAR(plain->z[0] + plain->z[1], 3.0, 0.15);
  EXPECT_NEAR(scaled->z[0] + scaled->z[1], 3.0, 0.15);
  // ... but the split the data barely see follows their noise in the fit at the stated spread,
  // and stays nearer the prior's where they are weighed by their scatter.
  const double plain_off = std::abs(plain->z[1] - 2.0);
  const double scaled_off = std::abs(scaled->z[1] - 2.0);
  EXPECT_GT(plain_off, 0.5) << plain->z.transpose();
  std::printf("split b: %.3f at the stated spread, %.3f weighed by the scatter (prior 2)\n",
              plain->z[1], scaled->z[1]);
  EXPECT_LT(scaled_off, 0.5 * plain_off) << scaled->z.transpose();
  // The data's own pull is reported: the solution at the stated spread.
  EXPECT_LT((scaled->z_stated - plain->z).norm(), 1e-9);
  // The uncertainty of the split is the prior's order, not the data's illusory precision.
  EXPECT_GT(std::sqrt(scaled->covariance(1, 1)), 0.3);
}

}  // namespace
}  // namespace shardscope::calibrate
