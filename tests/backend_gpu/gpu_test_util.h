// What the GPU tests share: a CUDA device (the test skips where no GPU answers, as on CI),
// typed host vectors to and from its buffers, and bf16 helpers for host references.
//
// Contents:
//   CudaDeviceTest   fixture: device(), Upload / Download / Zeros, Sync
//   Bf16Vector       deterministic bf16 values (as bits) and their floats
//   MaxAbsDiff / MaxAbs
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/backends.h"
#include "backend/device/deterministic.h"

namespace shardscope::backend::testing {

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = MakeCudaDevice(DeviceOptions{});
    if (!d.ok()) GTEST_SKIP() << d.status().message();
    device_ = std::move(*d);
  }
  void TearDown() override {
    for (const DeviceBuffer& b : owned_) device_->Free(b);
    owned_.clear();
    device_.reset();
  }

  Device& device() { return *device_; }
  void Sync() { ASSERT_TRUE(device_->Synchronize(std::chrono::seconds(60)).ok()); }

  void* Alloc(int64_t bytes) {
    auto b = device_->Allocate(bytes, MemCategory::kTemporaries, Lane::kCompute);
    EXPECT_TRUE(b.ok()) << b.status().message();
    if (!b.ok()) return nullptr;
    owned_.push_back(*b);
    return b->data;
  }
  template <typename T>
  void* Upload(const std::vector<T>& host) {
    void* p = Alloc(static_cast<int64_t>(host.size() * sizeof(T)));
    EXPECT_TRUE(device_->Memcpy(Lane::kCompute, p, host.data(), host.size() * sizeof(T)).ok());
    Sync();
    return p;
  }
  template <typename T>
  void* Zeros(size_t n) {
    return Upload(std::vector<T>(n, T{}));
  }
  template <typename T>
  std::vector<T> Download(const void* p, size_t n) {
    Sync();
    std::vector<T> host(n);
    EXPECT_TRUE(device_->Memcpy(Lane::kCompute, host.data(), p, n * sizeof(T)).ok());
    Sync();
    return host;
  }

 private:
  std::unique_ptr<Device> device_;
  std::vector<DeviceBuffer> owned_;
};

// n bf16 values DeterministicValue(seed, i) · scale, as bits.
inline std::vector<uint16_t> Bf16Vector(size_t n, uint64_t seed, float scale = 1.0f) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = FloatToBf16Bits(DeterministicValue(seed, i) * scale);
  return v;
}
inline std::vector<float> FloatVector(size_t n, uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = DeterministicValue(seed, i) * scale;
  return v;
}
inline std::vector<float> Widen(const std::vector<uint16_t>& bits) {
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = Bf16BitsToFloat(bits[i]);
  return v;
}

inline float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = a.size() == b.size() ? 0.0f : INFINITY;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::fmax(m, std::fabs(a[i] - b[i]));
  return m;
}
inline float MaxAbs(const std::vector<float>& a) {
  float m = 0.0f;
  for (float x : a) m = std::fmax(m, std::fabs(x));
  return m;
}

}  // namespace shardscope::backend::testing
