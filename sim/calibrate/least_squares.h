// Bounded, regularised nonlinear least squares (Levenberg-Marquardt on Eigen): the solver
// under `calibrate`, knowing nothing of cost models.
//
// Contents:
//   ResidualFn          z → the data residuals (already divided by their standard deviation)
//   LeastSquaresProblem start/prior, bounds and the residual function
//   LeastSquaresResult  the solution, its covariance, the residuals' cost
//   SolveLeastSquares   minimises |r(z)|² + Σ ((z - prior) / prior_sd)² with lo <= z <= hi
//
// With `scale_to_misfit`, residuals that scatter more than their stated spread (the data cost
// per degree of freedom s² > 1) are divided by s and the problem solved again, until s settles:
// the data are weighed against the prior by the spread they show, not the one assumed. Without
// it, measurements that scatter ten times more than assumed outweigh the prior a hundredfold,
// and a direction the data cannot tell apart (a fixed cost against a per-FLOP one, measured at
// one size) is decided by their noise: fits of repeated runs fall on either side.
//
// The Jacobian is taken by forward differences (step `fd_step` in z); each step solves
// (JᵀJ + P + μ·diag) δ = -(Jᵀr + P(z - prior)), P = diag(1 / prior_sd²), and projects z + δ
// onto the bounds. The covariance is s²·(JᵀJ + P)⁻¹ at the solution, s² the data cost over
// its degrees of freedom (at least 1): the normal equations' estimate, scaled by the misfit.
#pragma once

#include <Eigen/Dense>
#include <functional>
#include <vector>

#include "core/util/status.h"

namespace shardscope::calibrate {

using ResidualFn = std::function<Result<Eigen::VectorXd>(const Eigen::VectorXd& z)>;

struct LeastSquaresProblem {
  Eigen::VectorXd prior;     // also the start
  Eigen::VectorXd prior_sd;  // > 0
  Eigen::VectorXd lo, hi;
  ResidualFn residuals;
  int max_iterations = 40;
  double fd_step = 1e-2;
  double tolerance = 1e-7;  // relative decrease of the cost that ends the iterations
  bool scale_to_misfit = false;
  // Divides the residuals from the start (>= 1): a spread already measured, as cross-validation
  // folds take the whole fit's instead of measuring their own again.
  double residual_scale = 1;
};

struct LeastSquaresResult {
  Eigen::VectorXd z;
  Eigen::MatrixXd covariance;
  Eigen::MatrixXd jacobian;  // of the data residuals at z
  double data_cost = 0;      // |r(z)|², of the residuals as given (not divided by noise_scale)
  // s by which the residuals were divided (scale_to_misfit; 1: they scatter no more than stated).
  double noise_scale = 1;
  // The solution of the first solve, at the residuals' stated spread (residual_scale): where
  // the data alone pull (= z unless scale_to_misfit rescaled them).
  Eigen::VectorXd z_stated;
  int iterations = 0;
};

Result<LeastSquaresResult> SolveLeastSquares(const LeastSquaresProblem& problem);

// The data residuals' Jacobian at `z` by forward differences (what the solver uses).
Result<Eigen::MatrixXd> NumericJacobian(const ResidualFn& f, const Eigen::VectorXd& z,
                                        const Eigen::VectorXd& r0, double step);

}  // namespace shardscope::calibrate
