#include "sim/calibrate/least_squares.h"

#include <algorithm>
#include <cmath>

namespace shardscope::calibrate {
namespace {

double PriorCost(const LeastSquaresProblem& p, const Eigen::VectorXd& z) {
  return ((z - p.prior).array() / p.prior_sd.array()).square().sum();
}

Eigen::VectorXd Clamp(const LeastSquaresProblem& p, Eigen::VectorXd z) {
  return z.cwiseMax(p.lo).cwiseMin(p.hi);
}

}  // namespace

Result<Eigen::MatrixXd> NumericJacobian(const ResidualFn& f, const Eigen::VectorXd& z,
                                        const Eigen::VectorXd& r0, double step) {
  Eigen::MatrixXd j(r0.size(), z.size());
  for (int i = 0; i < z.size(); ++i) {
    Eigen::VectorXd zi = z;
    zi[i] += step;
    SS_ASSIGN_OR_RETURN(Eigen::VectorXd ri, f(zi));
    j.col(i) = (ri - r0) / step;
  }
  return j;
}

namespace {

Result<LeastSquaresResult> SolveOnce(const LeastSquaresProblem& p) {
  const int n = static_cast<int>(p.prior.size());
  const Eigen::VectorXd prec = p.prior_sd.array().square().inverse().matrix();
  LeastSquaresResult out;
  Eigen::VectorXd z = Clamp(p, p.prior);
  SS_ASSIGN_OR_RETURN(Eigen::VectorXd r, p.residuals(z));
  double cost = r.squaredNorm() + PriorCost(p, z);
  double mu = 1e-3;
  Eigen::MatrixXd j;
  bool fresh = false;
  for (int it = 0; it < p.max_iterations; ++it) {
    out.iterations = it + 1;
    if (!fresh) {
      SS_ASSIGN_OR_RETURN(j, NumericJacobian(p.residuals, z, r, p.fd_step));
      fresh = true;
    }
    Eigen::MatrixXd a = j.transpose() * j;
    a.diagonal() += prec;
    const Eigen::VectorXd g = j.transpose() * r + prec.cwiseProduct(z - p.prior);
    bool improved = false;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      Eigen::MatrixXd damped = a;
      damped.diagonal() += mu * a.diagonal().cwiseMax(1e-9);
      const Eigen::VectorXd step = damped.ldlt().solve(-g);
      const Eigen::VectorXd z_new = Clamp(p, z + step);
      if ((z_new - z).norm() < 1e-12) break;
      SS_ASSIGN_OR_RETURN(Eigen::VectorXd r_new, p.residuals(z_new));
      const double cost_new = r_new.squaredNorm() + PriorCost(p, z_new);
      if (cost_new < cost) {
        const double gain = (cost - cost_new) / std::max(cost, 1e-300);
        z = z_new;
        r = r_new;
        cost = cost_new;
        mu = std::max(mu / 3, 1e-9);
        improved = true;
        fresh = false;
        if (gain < p.tolerance) it = p.max_iterations;  // converged
      } else {
        mu *= 4;
      }
    }
    if (!improved) break;
  }
  if (!fresh) {
    SS_ASSIGN_OR_RETURN(j, NumericJacobian(p.residuals, z, r, p.fd_step));
  }
  Eigen::MatrixXd a = j.transpose() * j;
  a.diagonal() += prec;
  const double dof = std::max(1.0, static_cast<double>(r.size() - n));
  const double s2 = std::max(r.squaredNorm() / dof, 1e-12);
  out.z = z;
  out.jacobian = j;
  out.data_cost = r.squaredNorm();
  out.covariance = s2 * a.inverse();
  return out;
}

}  // namespace

Result<LeastSquaresResult> SolveLeastSquares(const LeastSquaresProblem& p) {
  // The residuals divided by `scale`; the result's cost and Jacobian are of the undivided ones.
  auto solve = [&p](double scale) -> Result<LeastSquaresResult> {
    if (scale == 1) return SolveOnce(p);
    LeastSquaresProblem q = p;
    q.residuals = [&p, scale](const Eigen::VectorXd& z) -> Result<Eigen::VectorXd> {
      SS_ASSIGN_OR_RETURN(Eigen::VectorXd r, p.residuals(z));
      return Eigen::VectorXd(r / scale);
    };
    SS_ASSIGN_OR_RETURN(LeastSquaresResult out, SolveOnce(q));
    out.data_cost *= scale * scale;
    out.jacobian *= scale;
    return out;
  };
  double scale = std::max(p.residual_scale, 1.0);
  SS_ASSIGN_OR_RETURN(LeastSquaresResult out, solve(scale));
  const Eigen::VectorXd z_stated = out.z;
  // Each solve starts again from the prior: the weaker data may settle elsewhere. A scale
  // within 5% of the last is settled (the misfit it is read from is no more precise); the
  // rounds are a bound, not a count it needs (the CPU test's fits rescale once).
  constexpr int kRounds = 6;
  constexpr double kSettled = 1.05;
  const double dof = std::max(1.0, static_cast<double>(out.jacobian.rows() - p.prior.size()));
  for (int round = 0; p.scale_to_misfit && round < kRounds; ++round) {
    const double s = std::sqrt(out.data_cost / dof) / scale;
    if (s <= kSettled) break;
    scale *= s;
    SS_ASSIGN_OR_RETURN(out, solve(scale));
  }
  out.z_stated = z_stated;
  out.noise_scale = scale;
  return out;
}

}  // namespace shardscope::calibrate
