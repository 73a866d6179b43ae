// Our flash-attention kernels against the host device's exact attention (fp32 softmax over
// the same bf16 inputs): outputs within bf16 rounding of the probabilities, log-sum-exp
// within fp32 rounding, gradients within the bf16 rounding of P and dS.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/host/host_kernels.h"
#include "gpu_test_util.h"

namespace shardscope::backend::testing {
namespace {

using AttentionTest = CudaDeviceTest;

struct Case {
  std::string name;
  int64_t batch, heads, kv_heads, q_seq, kv_seq, d, dv, window;
  bool causal;
};

// Relative to the largest reference magnitude: bf16 keeps 8 bits.
void ExpectNear(const std::vector<uint16_t>& want_bits, const std::vector<uint16_t>& got_bits,
                float rel, const std::string& what) {
  const std::vector<float> want = Widen(want_bits), got = Widen(got_bits);
  EXPECT_LE(MaxAbsDiff(want, got), rel * MaxAbs(want) + 1e-6f) << what;
}

TEST_F(AttentionTest, ForwardAndBackwardMatchTheHost) {
  const std::vector<Case> cases = {
      {"causal mha d64", 2, 4, 4, 130, 130, 64, 64, 0, true},
      {"gqa 4:1 d128, queries the last 70 of 200", 1, 8, 2, 70, 200, 128, 128, 0, true},
      {"sliding window 48", 1, 2, 1, 160, 160, 64, 64, 48, true},
      {"bidirectional", 1, 2, 2, 96, 96, 32, 32, 0, false},
      {"v head dim differs (MLA-like)", 1, 2, 2, 64, 64, 192, 128, 0, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t nq = c.batch * c.heads * c.q_seq * c.d;
    const int64_t nk = c.batch * c.kv_heads * c.kv_seq * c.d;
    const int64_t nv = c.batch * c.kv_heads * c.kv_seq * c.dv;
    const int64_t no = c.batch * c.heads * c.q_seq * c.dv;
    const int64_t nl = c.batch * c.heads * c.q_seq;
    std::vector<uint16_t> q = Bf16Vector(nq, 1, 2.0f), k = Bf16Vector(nk, 2, 2.0f),
                          v = Bf16Vector(nv, 3), dout = Bf16Vector(no, 4);
    AttentionArgs a;
    a.batch = c.batch;
    a.heads = c.heads;
    a.kv_heads = c.kv_heads;
    a.q_seq = c.q_seq;
    a.kv_seq = c.kv_seq;
    a.head_dim = c.d;
    a.v_head_dim = c.dv;
    a.window = c.window;
    a.causal = c.causal;

    AttentionArgs h = a;
    std::vector<uint16_t> ho(no), hdq(nq), hdk(nk), hdv(nv);
    std::vector<float> hlse(nl);
    h.q = q.data();
    h.k = k.data();
    h.v = v.data();
    h.out = ho.data();
    h.lse = hlse.data();
    ASSERT_TRUE(host::AttentionForward(h).ok());
    h.d_out = dout.data();
    h.d_q = hdq.data();
    h.d_k = hdk.data();
    h.d_v = hdv.data();
    ASSERT_TRUE(host::AttentionBackward(h).ok());

    a.q = Upload(q);
    a.k = Upload(k);
    a.v = Upload(v);
    a.out = Alloc(no * 2);
    a.lse = static_cast<float*>(Alloc(nl * 4));
    ASSERT_TRUE(device().AttentionForward(Lane::kCompute, a).ok());
    ExpectNear(ho, Download<uint16_t>(a.out, no), 1.0f / 64.0f, "out");
    EXPECT_LE(MaxAbsDiff(hlse, Download<float>(a.lse, nl)), 1e-3f) << "lse";

    a.d_out = Upload(dout);
    a.d_q = Alloc(nq * 2);
    a.d_k = Alloc(nk * 2);
    a.d_v = Alloc(nv * 2);
    ASSERT_TRUE(device().AttentionBackward(Lane::kCompute, a).ok());
    ExpectNear(hdv, Download<uint16_t>(a.d_v, nv), 1.0f / 32.0f, "d_v");
    ExpectNear(hdk, Download<uint16_t>(a.d_k, nk), 1.0f / 16.0f, "d_k");
    ExpectNear(hdq, Download<uint16_t>(a.d_q, nq), 1.0f / 16.0f, "d_q");
  }
}

TEST_F(AttentionTest, RejectsWhatItCannotRun) {
  AttentionArgs a;
  a.heads = 6;
  a.kv_heads = 4;  // does not divide
  a.head_dim = a.v_head_dim = 64;
  EXPECT_EQ(device().AttentionForward(Lane::kCompute, a).code(), ErrorCode::kInvalidInput);
  a.kv_heads = 3;
  a.head_dim = 72;  // not a multiple of 16
  EXPECT_EQ(device().AttentionForward(Lane::kCompute, a).code(), ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace shardscope::backend::testing
