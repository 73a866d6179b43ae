// The default collective model against measured NCCL curves (tests/cost/data/collectives.json):
// within 15% of the measured bus bandwidth at every size >= 1 MiB. Points the model cannot
// meet carry a `known_miss` reason in the data file; they must stay within 35% so that a
// regression still shows, and there may be no more than four of them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/util/units.h"
#include "tests/cost/collective_curves.h"

namespace shardscope::testing {
namespace {

std::string DataPath() {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/cost/data/collectives.json";
}

TEST(CollectiveValidation, WithinFifteenPercentFromOneMiB) {
  Result<std::vector<Curve>> curves = LoadCurves(DataPath());
  ASSERT_TRUE(curves.ok()) << curves.status().message();
  int checked = 0;
  int known_misses = 0;
  for (const Curve& curve : *curves) {
    if (curve.informational) continue;
    for (const CurvePoint& point : curve.points) {
      if (point.bytes < kMiB) continue;
      Result<CollectiveEstimate> e = ModelPoint(curve, point);
      ASSERT_TRUE(e.ok()) << e.status().message();
      const double err = e->busbw_gbps / point.busbw_gbps - 1.0;
      const std::string where =
          fmt::format("{} ({} GPUs) at {} MiB: model {:.1f} ({} {}) vs measured {:.1f} GB/s",
                      curve.id, point.gpus, point.bytes / kMiB, e->busbw_gbps,
                      NcclAlgoName(e->algo), NcclProtoName(e->proto), point.busbw_gbps);
      ++checked;
      if (!point.known_miss.empty()) {
        ++known_misses;
        EXPECT_LE(std::abs(err), 0.35) << where << " (known miss: " << point.known_miss << ")";
        continue;
      }
      EXPECT_LE(std::abs(err), 0.15) << where;
    }
  }
  EXPECT_GE(checked, 50);
  EXPECT_LE(known_misses, 4);
}

// The multi-node curves are outside the target, but their calibration must load and every
// point must be priced by a multi-node algorithm.
TEST(CollectiveValidation, InformationalCurvesArePriced) {
  Result<std::vector<Curve>> curves = LoadCurves(DataPath());
  ASSERT_TRUE(curves.ok()) << curves.status().message();
  int informational = 0;
  for (const Curve& curve : *curves) {
    if (!curve.informational) continue;
    ++informational;
    EXPECT_GT(curve.nodes, 1) << curve.id;
    for (const CurvePoint& point : curve.points) {
      Result<CollectiveEstimate> e = ModelPoint(curve, point);
      ASSERT_TRUE(e.ok()) << curve.id << ": " << e.status().message();
      EXPECT_NE(e->algo, NcclAlgo::kNvls) << curve.id;  // single-node NVLS cannot span nodes
      EXPECT_GT(e->busbw_gbps, 0) << curve.id;
    }
  }
  EXPECT_EQ(informational, 2);
}

}  // namespace
}  // namespace shardscope::testing
