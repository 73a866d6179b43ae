#include "sim/cost/calibration.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/cost/cost_model.h"

namespace shardscope {
namespace {

std::string Fixture(const std::string& name) {
  return std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/cost/data/" + name;
}

Hardware H100() { return *LookupHardware("h100-sxm", 8, 1); }

// The message of parsing `text` as "cal.json" (empty when it parsed).
std::string ParseError(const std::string& text) {
  Result<Calibration> cal = ParseCalibration(text, "cal.json");
  if (cal.ok()) return "";
  EXPECT_EQ(cal.status().code(), ErrorCode::kInvalidInput);
  return cal.status().message();
}

TEST(Calibration, FixtureOverridesEverySection) {
  Result<Calibration> cal = LoadCalibration(Fixture("calibration_h100.json"));
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  Hardware hw = H100();
  CostParams params = DefaultCostParams(hw);
  ASSERT_TRUE(ApplyCalibration(*cal, &hw, &params).ok());
  EXPECT_DOUBLE_EQ(hw.gpu.best_matmul_flops, 700e12);
  EXPECT_DOUBLE_EQ(params.gemm_efficiency, 700.0 / 989.0);  // follows the GPU figure
  EXPECT_DOUBLE_EQ(hw.gpu.hbm_gbps, 3000);
  EXPECT_DOUBLE_EQ(hw.gpu.nvlink_link_gbps, 18.0);
  EXPECT_DOUBLE_EQ(hw.node.nic_gbit_per_s, 200);
  EXPECT_DOUBLE_EQ(params.gemm_ramp_us, 1.0);
  EXPECT_DOUBLE_EQ(params.attention_efficiency, 0.3);
  EXPECT_DOUBLE_EQ(params.elementwise_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(params.kernel_overhead_us, 3);
  EXPECT_DOUBLE_EQ(params.unit_overhead_us, 50);
  EXPECT_DOUBLE_EQ(params.overlap_slowdown, 1.2);
  EXPECT_DOUBLE_EQ(params.collective_launch_us, 10);
  EXPECT_DOUBLE_EQ(params.collective_latency_scale, 2.0);
  EXPECT_DOUBLE_EQ(params.collective_bandwidth_scale, 0.9);
  EXPECT_FALSE(params.nvls_enabled);
  ASSERT_EQ(params.collective_overrides.size(), 1u);
  EXPECT_EQ(params.collective_overrides[0].type, OpType::kReduceScatter);
  EXPECT_DOUBLE_EQ(params.collective_overrides[0].busbw_gbps, 300);
}

TEST(Calibration, OverridesTakeEffectInTheModel) {
  Result<Calibration> cal = LoadCalibration(Fixture("calibration_h100.json"));
  ASSERT_TRUE(cal.ok());
  const Hardware base_hw = H100();
  Hardware hw = base_hw;
  CostParams params = DefaultCostParams(hw);
  ASSERT_TRUE(ApplyCalibration(*cal, &hw, &params).ok());
  const auto base = MakeDefaultCostModel(base_hw, DefaultCostParams(base_hw));
  const auto calibrated = MakeDefaultCostModel(hw, params);
  const GroupShape node{8, 8, 1};
  const int64_t bytes = int64_t{256} << 20;
  // The override: 30 us + 256 MiB · 7/8 / 300 GB/s.
  const CollectiveEstimate rs = calibrated->CollectiveNs(OpType::kReduceScatter, bytes, node);
  EXPECT_EQ(rs.algo, NcclAlgo::kCalibrated);
  EXPECT_NEAR(rs.ns, 30e3 + bytes * 7.0 / 8.0 / 300.0, 2.0);
  EXPECT_NEAR(rs.busbw_gbps, bytes * 7.0 / 8.0 / rs.ns, 1e-6);
  // Other shapes still use NCCL's model, with the slower links and NVLS off.
  const CollectiveEstimate ar = calibrated->CollectiveNs(OpType::kAllReduce, bytes, node);
  EXPECT_NE(ar.algo, NcclAlgo::kNvls);
  EXPECT_GT(ar.ns, base->CollectiveNs(OpType::kAllReduce, bytes, node).ns);
  ComputeItem gemm;
  gemm.kind = OpKind::kLinear;
  gemm.cost.fwd_flops = 2.0 * 4096 * 4096 * 4096;
  gemm.cost.gemm_m = gemm.cost.gemm_n = gemm.cost.gemm_k = 4096;
  EXPECT_GT(calibrated->ComputeNs(gemm), base->ComputeNs(gemm));
  EXPECT_DOUBLE_EQ(calibrated->Overlap().uniform_slowdown, 1.2);
  EXPECT_EQ(base->Overlap().uniform_slowdown, 0.0);  // the contention model by default
  // A measured curve replaces the time, not the blocks NCCL holds or the traffic it makes.
  EXPECT_EQ(rs.channels, base->CollectiveNs(OpType::kReduceScatter, bytes, node).channels);
  EXPECT_GT(rs.hbm_gbps, 2.0 * rs.busbw_gbps);
  EXPECT_EQ(calibrated->UnitOverheadNs(), 50000);
}

TEST(Calibration, EmptyFileChangesNothing) {
  Result<Calibration> cal = ParseCalibration("{}", "empty.json");
  ASSERT_TRUE(cal.ok());
  Hardware hw = H100();
  CostParams params = DefaultCostParams(hw);
  ASSERT_TRUE(ApplyCalibration(*cal, &hw, &params).ok());
  EXPECT_DOUBLE_EQ(params.gemm_efficiency, DefaultCostParams(H100()).gemm_efficiency);
  EXPECT_DOUBLE_EQ(hw.gpu.hbm_gbps, H100().gpu.hbm_gbps);
}

TEST(Calibration, UnknownKeysAreNamedWithSuggestions) {
  std::string m = ParseError(R"({"comptue": {}})");
  EXPECT_NE(m.find("cal.json: comptue: unknown key (did you mean compute?)"), std::string::npos)
      << m;
  m = ParseError(R"({"compute": {"gemm_efficency": 0.7}})");
  EXPECT_NE(m.find("cal.json: compute.gemm_efficency: unknown key (did you mean gemm_efficiency?)"),
            std::string::npos)
      << m;
  m = ParseError(R"({"gpu": {"hbm_tb": 3}})");
  EXPECT_NE(m.find("cal.json: gpu.hbm_tb: unknown key"), std::string::npos) << m;
  m = ParseError(R"({"collectives": {"latency": 2}})");
  EXPECT_NE(m.find("collectives.latency: unknown key"), std::string::npos) << m;
  m = ParseError(
      R"({"collectives": {"overrides": [{"op": "all_gather", "ranks_per_node": 8, "nodes": 1,
                    "latency_us": 5, "busbw_gbps": 300, "size": 4}]}})");
  EXPECT_NE(m.find("collectives.overrides[0].size: unknown key"), std::string::npos) << m;
}

TEST(Calibration, BadValuesAreNamed) {
  std::string m = ParseError(R"({"compute": {"gemm_efficiency": "high"}})");
  EXPECT_NE(m.find("compute.gemm_efficiency: expected a number"), std::string::npos) << m;
  m = ParseError(R"({"compute": {"gemm_efficiency": 1.5}})");
  EXPECT_NE(m.find("compute.gemm_efficiency: 1.5 is out of range [0.01, 1]"), std::string::npos)
      << m;
  m = ParseError(R"({"compute": {"overlap_slowdown": 0.5}})");
  EXPECT_NE(m.find("overlap_slowdown"), std::string::npos) << m;
  m = ParseError(R"({"compute": {"gemm_tile": 64.5}})");
  EXPECT_NE(m.find("gemm_tile: expected an integer"), std::string::npos) << m;
  m = ParseError(R"({"collectives": {"nvls": "no"}})");
  EXPECT_NE(m.find("collectives.nvls: expected true or false"), std::string::npos) << m;
  m = ParseError(
      R"({"collectives": {"overrides": [{"op": "allgather", "ranks_per_node": 8, "nodes": 1,
                    "latency_us": 5, "busbw_gbps": 300}]}})");
  EXPECT_NE(m.find("overrides[0].op: 'allgather' is not a collective (did you mean all_gather?)"),
            std::string::npos)
      << m;
  m = ParseError(
      R"({"collectives": {"overrides": [{"op": "all_gather", "ranks_per_node": 8, "nodes": 1,
                    "latency_us": 5}]}})");
  EXPECT_NE(m.find("overrides[0]: missing key 'busbw_gbps'"), std::string::npos) << m;
  m = ParseError(R"({"collectives": {"overrides": {"op": "all_gather"}}})");
  EXPECT_NE(m.find("collectives.overrides: expected an array"), std::string::npos) << m;
  m = ParseError(R"({"gpu": 3})");
  EXPECT_NE(m.find("cal.json: gpu: expected an object"), std::string::npos) << m;
  m = ParseError("[1, 2]");
  EXPECT_NE(m.find("cal.json: expected a JSON object"), std::string::npos) << m;
  m = ParseError("{\"gpu\": ");
  EXPECT_NE(m.find("cal.json: not valid JSON"), std::string::npos) << m;
}

TEST(Calibration, CrossChecksRunAgainstTheScenarioGpu) {
  // 1500 TFLOP/s is a fine best matmul for a B200 but above an H100's peak.
  Result<Calibration> cal =
      ParseCalibration(R"({"gpu": {"best_matmul_tflops": 1500}})", "cal.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  Hardware b200 = *LookupHardware("b200", 8, 1);
  CostParams params = DefaultCostParams(b200);
  EXPECT_TRUE(ApplyCalibration(*cal, &b200, &params).ok());
  Hardware h100 = H100();
  CostParams h100_params = DefaultCostParams(h100);
  const Status s = ApplyCalibration(*cal, &h100, &h100_params);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("best_matmul_tflops: 1500 exceeds peak_bf16_tflops 989"),
            std::string::npos)
      << s.message();
  EXPECT_DOUBLE_EQ(h100.gpu.best_matmul_flops, 794.5e12);  // untouched on error
}

// A file fitted on one GPU applies to that GPU only (an H100 fit moved an MI300X +10%).
// A calibration may repeat the scenario's node size, whatever it is, and nothing else: the file
// is validated without a scenario, so only its application to one can tell.
TEST(Calibration, NodeSizeMayRepeatTheScenariosOwn) {
  Result<Calibration> cal = ParseCalibration(R"({"node": {"gpus_per_node": 4}})", "cal.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  Hardware four = *LookupHardware("h100-sxm", 4, 1);
  CostParams params = DefaultCostParams(four);
  EXPECT_TRUE(ApplyCalibration(*cal, &four, &params).ok());
  EXPECT_EQ(four.node.gpus_per_node, 4);
  Hardware eight = H100();
  const Status s = ApplyCalibration(*cal, &eight, &params);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cal.json: node.gpus_per_node: set by the scenario (8), not by a "
                             "calibration file"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(eight.node.gpus_per_node, 8);  // left as it was
}

TEST(Calibration, AFileFittedOnOneGpuIsRefusedByAnother) {
  Result<Calibration> cal = ParseCalibration(
      R"({"fitted_on": "H100-SXM", "compute": {"gemm_efficiency": 0.7}})", "cal.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  Hardware h100 = H100();
  CostParams params = DefaultCostParams(h100);
  EXPECT_TRUE(ApplyCalibration(*cal, &h100, &params).ok());
  EXPECT_DOUBLE_EQ(params.gemm_efficiency, 0.7);
  Hardware mi300x = *LookupHardware("mi300x", 8, 1);
  CostParams mi_params = DefaultCostParams(mi300x);
  const double before = mi_params.gemm_efficiency;
  const Status s = ApplyCalibration(*cal, &mi300x, &mi_params);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), ErrorCode::kInvalidInput);
  EXPECT_NE(s.message().find("cal.json: fitted_on: the file was fitted on H100-SXM, the scenario "
                             "runs mi300x"),
            std::string::npos)
      << s.message();
  EXPECT_DOUBLE_EQ(mi_params.gemm_efficiency, before);  // untouched on error
  // Not a catalog GPU: refused when the file is read.
  Result<Calibration> bad = ParseCalibration(R"({"fitted_on": "h100"})", "cal.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cal.json: fitted_on: expected a catalog GPU name"),
            std::string::npos)
      << bad.status().message();
}

TEST(Calibration, FilesNameThemselvesInErrors) {
  Result<Calibration> bad = LoadCalibration(Fixture("calibration_bad_key.json"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find("calibration_bad_key.json: compute.overlap_slowdwn: unknown key"),
      std::string::npos)
      << bad.status().message();
  Result<Calibration> missing = LoadCalibration(Fixture("no_such_file.json"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_file.json"), std::string::npos);
}

TEST(Calibration, WritesWhatItReads) {
  Result<Calibration> cal = LoadCalibration(Fixture("calibration_h100.json"));
  ASSERT_TRUE(cal.ok());
  const std::string text = CalibrationToJson(*cal);
  Result<Calibration> again = ParseCalibration(text, "again.json");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->overrides, cal->overrides);
  EXPECT_EQ(CalibrationToJson(*again), text);
}

}  // namespace
}  // namespace shardscope
