#include "backend/cuda/cuda_device.h"

#include <cublasLt.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cmath>
#include <limits>

#include "backend/backends.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/kernels/flash_attention.h"
#include "backend/cuda/kernels/foreach_adamw.h"
#include "backend/cuda/kernels/kernels.h"

#if defined(SHARDSCOPE_HAVE_CUDNN)
#include <cudnn.h>
#endif

namespace shardscope::backend::cuda {
namespace {

struct CudaEvent final : DeviceEvent {
  cudaEvent_t event = nullptr;
  ~CudaEvent() override {
    // Destroying a recorded event that has not completed is legal: CUDA frees it later.
    if (event) cudaEventDestroy(event);
  }
};

const CudaEvent& AsCuda(const DeviceEvent& e) { return static_cast<const CudaEvent&>(e); }

// "13.0" from 13000 (CUDA's encoding of driver and runtime versions).
std::string CudaVersionText(int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

// How long Synchronize and the host workers sleep between looks.
constexpr auto kPollInterval = std::chrono::microseconds(20);

}  // namespace

Result<std::unique_ptr<CudaDevice>> CudaDevice::Create(int ordinal, int64_t capacity_bytes) {
  std::unique_ptr<CudaDevice> d(new CudaDevice(ordinal, capacity_bytes));
  SS_RETURN_IF_ERROR(d->Init());
  return d;
}

Status CudaDevice::Bind() const {
  return CudaStatus(cudaSetDevice(ordinal_), fmt::format("cudaSetDevice({})", ordinal_));
}

Status CudaDevice::Init() {
  SS_RETURN_IF_ERROR(Bind());
  SS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop_, ordinal_));
  SS_CUDA_RETURN_IF_ERROR(cudaFree(nullptr));  // creates the context now, not in the step
  int least = 0, greatest = 0;
  SS_CUDA_RETURN_IF_ERROR(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  for (int i = 0; i < kNumLanes; ++i) {
    const Lane lane = static_cast<Lane>(i + 1);
    const bool comm = lane == Lane::kAllGather || lane == Lane::kReduceScatter ||
                      lane == Lane::kAllReduce || lane == Lane::kP2P;
    SS_CUDA_RETURN_IF_ERROR(
        cudaStreamCreateWithPriority(&streams_[i], cudaStreamNonBlocking, comm ? greatest : least));
  }
  SS_ASSIGN_OR_RETURN(lt_, LtGemm::Create());
  void* gates = nullptr;
  SS_CUDA_RETURN_IF_ERROR(cudaHostAlloc(&gates, kNumLanes * sizeof(uint32_t), cudaHostAllocMapped));
  gates_ = static_cast<uint32_t*>(gates);
  for (int i = 0; i < kNumLanes; ++i) gates_[i] = 0;
  void* gates_device = nullptr;
  SS_CUDA_RETURN_IF_ERROR(cudaHostGetDevicePointer(&gates_device, gates, 0));
  gates_device_ = static_cast<uint32_t*>(gates_device);
  return Status::Ok();
}

CudaDevice::~CudaDevice() {
  (void)Bind();
  // Open every gate so no stream waits on a task that will not run, then stop the workers.
  stopping_ = true;
  if (gates_) {
    for (int i = 0; i < kNumLanes; ++i) {
      __atomic_store_n(&gates_[i], std::numeric_limits<uint32_t>::max(), __ATOMIC_RELEASE);
    }
  }
  for (auto& w : workers_) {
    if (!w) continue;
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->cv.notify_all();
    }
    w->thread.join();
    for (auto& item : w->items) cudaEventDestroy(item.before);
  }
  cudaDeviceSynchronize();
  for (int i = 0; i < kNumLanes; ++i) {
    if (gemm_workspace_[i].handle >= 0) Free(gemm_workspace_[i]);
  }
  ReleaseAllMemory();
  lt_.reset();
  for (cudaStream_t s : streams_) {
    if (s) cudaStreamDestroy(s);
  }
  if (gates_) cudaFreeHost(gates_);
}

Status CudaDevice::CheckLane(Lane lane) const {
  const int i = Index(lane);
  if (i < 0 || i >= kNumLanes) return InvalidInput(fmt::format("lane {}", static_cast<int>(lane)));
  return Status::Ok();
}

DeviceDescription CudaDevice::Describe() const {
  DeviceDescription d;
  d.kind = DeviceKind::kCuda;
  d.name = prop_.name;
  d.index = ordinal_;
  d.memory_bytes = static_cast<int64_t>(prop_.totalGlobalMem);
  d.sm_count = prop_.multiProcessorCount;
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  d.versions["driver"] = CudaVersionText(driver);
  d.versions["cuda"] = CudaVersionText(runtime);
  const size_t lt = cublasLtGetVersion();
  d.versions["cublaslt"] = fmt::format("{}.{}.{}", lt / 10000, (lt / 100) % 100, lt % 100);
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    d.versions["nccl"] = fmt::format("{}.{}.{}", nccl / 10000, (nccl / 100) % 100, nccl % 100);
  }
#if defined(SHARDSCOPE_HAVE_CUDNN)
  const size_t dnn = cudnnGetVersion();
  d.versions["cudnn"] = fmt::format("{}.{}.{}", dnn / 10000, (dnn / 100) % 100, dnn % 100);
#endif
  // Which attention ran: our own kernel (flash_attention.h says why), not cuDNN's SDPA.
  d.versions["attention"] = "shardscope flash-attention-2 (WMMA bf16)";
  d.versions["compute_capability"] = fmt::format("{}.{}", prop_.major, prop_.minor);
  return d;
}

// ----- Lanes and events -----

Result<std::shared_ptr<DeviceEvent>> CudaDevice::Record(Lane lane) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  auto e = std::make_shared<CudaEvent>();
  SS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e->event, cudaEventDefault));
  SS_CUDA_RETURN_IF_ERROR(cudaEventRecord(e->event, stream(lane)));
  return std::shared_ptr<DeviceEvent>(std::move(e));
}

Status CudaDevice::Wait(Lane lane, const DeviceEvent& event) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return CudaStatus(cudaStreamWaitEvent(stream(lane), AsCuda(event).event, 0),
                    fmt::format("cudaStreamWaitEvent on lane {}", LaneName(lane)));
}

bool CudaDevice::Done(const DeviceEvent& event) {
  const cudaError_t err = cudaEventQuery(AsCuda(event).event);
  // An error (a faulted kernel) counts as done so nobody waits forever; Synchronize and the
  // next CUDA call report it.
  return err != cudaErrorNotReady;
}

Result<int64_t> CudaDevice::ElapsedNs(const DeviceEvent& from, const DeviceEvent& to) {
  float ms = 0.0f;
  SS_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, AsCuda(from).event, AsCuda(to).event));
  return static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
}

Status CudaDevice::Synchronize(std::chrono::nanoseconds timeout) {
  SS_RETURN_IF_ERROR(Bind());
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string busy;
    for (int i = 0; i < kNumLanes; ++i) {
      const cudaError_t err = cudaStreamQuery(streams_[i]);
      if (err == cudaErrorNotReady) {
        busy += (busy.empty() ? "" : ", ") + std::string(LaneName(static_cast<Lane>(i + 1)));
      } else if (err != cudaSuccess) {
        return CudaStatus(err, fmt::format("work on lane {}", LaneName(static_cast<Lane>(i + 1))));
      }
    }
    for (int i = 0; i < kNumLanes && busy.empty(); ++i) {
      if (!workers_[i]) continue;
      std::lock_guard<std::mutex> lock(workers_[i]->mu);
      if (!workers_[i]->items.empty()) busy = std::string(LaneName(static_cast<Lane>(i + 1)));
    }
    if (busy.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return RuntimeError(fmt::format("lanes {} still busy after {:.3f} s", busy,
                                      std::chrono::duration<double>(timeout).count()));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  std::lock_guard<std::mutex> lock(task_error_mu_);
  return task_error_;
}

void CudaDevice::RecordTaskError(const Status& s) {
  std::lock_guard<std::mutex> lock(task_error_mu_);
  if (task_error_.ok()) task_error_ = s;
}

void CudaDevice::WorkerLoop(int lane) {
  HostWorker& w = *workers_[lane];
  if (Status s = Bind(); !s.ok()) RecordTaskError(s);
  for (;;) {
    HostWorker::Item item;
    {
      std::unique_lock<std::mutex> lock(w.mu);
      w.cv.wait(lock, [&] { return stopping_ || !w.items.empty(); });
      if (stopping_) return;
      item = std::move(w.items.front());
    }
    // The lane's work before the task; a fault there still runs the gate open below.
    const cudaError_t err = cudaEventSynchronize(item.before);
    cudaEventDestroy(item.before);
    Status s = err == cudaSuccess ? item.task() : CudaStatus(err, "work before a host task");
    if (!s.ok()) RecordTaskError(s);
    {
      std::lock_guard<std::mutex> lock(w.mu);
      w.items.pop_front();
    }
    __atomic_store_n(&gates_[lane], item.ticket, __ATOMIC_RELEASE);
  }
}

Status CudaDevice::HostTask(Lane lane, std::function<Status()> task) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  const int i = Index(lane);
  if (!workers_[i]) {
    workers_[i] = std::make_unique<HostWorker>();
    workers_[i]->thread = std::thread([this, i] { WorkerLoop(i); });
  }
  HostWorker& w = *workers_[i];
  HostWorker::Item item;
  SS_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&item.before, cudaEventDisableTiming));
  SS_CUDA_RETURN_IF_ERROR(cudaEventRecord(item.before, stream(lane)));
  item.ticket = ++w.issued;
  item.task = std::move(task);
  SS_RETURN_IF_ERROR(HostGate(gates_device_ + i, item.ticket, stream(lane)));
  std::lock_guard<std::mutex> lock(w.mu);
  w.items.push_back(std::move(item));
  w.cv.notify_all();
  return Status::Ok();
}

// ----- Kernels -----

Result<void*> CudaDevice::GemmWorkspace(Lane lane) {
  std::lock_guard<std::mutex> lock(workspace_mu_);
  DeviceBuffer& ws = gemm_workspace_[Index(lane)];
  if (ws.handle < 0) {
    SS_ASSIGN_OR_RETURN(
        ws, Allocate(static_cast<int64_t>(kLtWorkspaceBytes), MemCategory::kTemporaries, lane));
  }
  return ws.data;
}

Status CudaDevice::Gemm(Lane lane, const GemmArgs& a) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  if (a.a_dtype != a.b_dtype) {
    return InvalidInput(fmt::format("gemm kernel: operands of one dtype expected, got {} and {}",
                                    DTypeName(a.a_dtype), DTypeName(a.b_dtype)));
  }
  if (a.m == 0 || a.n == 0) return Status::Ok();
  if (a.k == 0) {  // an empty sum: out = beta · out
    return cuda::Cast(CastArgs{a.m * a.n * a.batch, a.out_dtype, a.out_dtype, a.out, a.out, a.beta},
                      stream(lane));
  }
  if (a.batch > std::numeric_limits<int>::max()) return InvalidInput("gemm kernel: batch");
  SS_ASSIGN_OR_RETURN(void* workspace, GemmWorkspace(lane));
  LtGemmArgs g;
  g.a = a.a;
  g.b = a.b;
  g.c = a.out;
  g.m = a.m;
  g.n = a.n;
  g.k = a.k;
  g.trans_a = a.trans_a;
  g.trans_b = a.trans_b;
  g.ab_dtype = a.a_dtype;
  g.out_dtype = a.out_dtype;
  g.alpha = a.alpha;
  g.beta = a.beta;
  g.batch = static_cast<int>(a.batch);
  g.stride_a = a.m * a.k;  // operands one after another (kernel_args.h)
  g.stride_b = a.k * a.n;
  g.stride_c = a.m * a.n;
  return lt_->Run(g, workspace, kLtWorkspaceBytes, stream(lane));
}

Status CudaDevice::AttentionForward(Lane lane, const AttentionArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return FlashAttentionForward(args, stream(lane));
}

Status CudaDevice::AttentionBackward(Lane lane, const AttentionArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  SS_RETURN_IF_ERROR(ValidateAttention(args));
  SS_ASSIGN_OR_RETURN(DeviceBuffer ws, Allocate(FlashAttentionBackwardWorkspaceBytes(args),
                                                MemCategory::kTemporaries, lane));
  Status s = FlashAttentionBackward(args, ws.data, stream(lane));
  // The workspace returns to the cache once the lane passed the kernel (record_stream).
  Result<std::shared_ptr<DeviceEvent>> done = Record(lane);
  if (!done.ok()) {
    SS_RETURN_IF_ERROR(Synchronize(std::chrono::hours(1)));
    Free(ws);
    return done.status();
  }
  Free(ws, *done);
  return s;
}

Status CudaDevice::RmsNorm(Lane lane, const NormArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return cuda::RmsNorm(args, stream(lane));
}

Status CudaDevice::Eltwise(Lane lane, const EltwiseArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return cuda::Eltwise(args, stream(lane));
}

Status CudaDevice::Cast(Lane lane, const CastArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return cuda::Cast(args, stream(lane));
}

Status CudaDevice::FsdpCopy(Lane lane, const FsdpCopyArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return cuda::FsdpCopy(args, stream(lane));
}

Status CudaDevice::AdamW(Lane lane, const AdamWArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return cuda::AdamW(args, stream(lane));
}

Status CudaDevice::Fill(Lane lane, const FillArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return cuda::Fill(args, stream(lane));
}

Status CudaDevice::Memcpy(Lane lane, void* dst, const void* src, int64_t bytes) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  if (bytes <= 0 || dst == src) return Status::Ok();
  return CudaStatus(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault, stream(lane)),
      fmt::format("cudaMemcpyAsync of {} bytes on lane {}", bytes, LaneName(lane)));
}

Status CudaDevice::Memset(Lane lane, void* dst, int value, int64_t bytes) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  if (bytes <= 0) return Status::Ok();
  return CudaStatus(cudaMemsetAsync(dst, value, static_cast<size_t>(bytes), stream(lane)),
                    fmt::format("cudaMemsetAsync of {} bytes on lane {}", bytes, LaneName(lane)));
}

Status CudaDevice::Hold(Lane lane, const HoldArgs& args) {
  SS_RETURN_IF_ERROR(CheckLane(lane));
  return cuda::Hold(args, stream(lane));
}

// ----- Memory -----

void* CudaDevice::RawAllocate(int64_t bytes, bool host) {
  void* p = nullptr;
  const cudaError_t err = host ? cudaHostAlloc(&p, static_cast<size_t>(bytes), cudaHostAllocDefault)
                               : cudaMalloc(&p, static_cast<size_t>(bytes));
  if (err != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky: clear it for the retry
    return nullptr;
  }
  return p;
}

void CudaDevice::RawFree(void* ptr, bool host) {
  if (host) {
    cudaFreeHost(ptr);
  } else {
    cudaFree(ptr);
  }
}

}  // namespace shardscope::backend::cuda

namespace shardscope::backend {

Result<std::unique_ptr<Device>> MakeCudaDevice(const DeviceOptions& options) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    return RuntimeError(fmt::format(
        "no CUDA device answers ({})",
        err != cudaSuccess ? fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(err))
                           : std::string("cudaGetDeviceCount returned 0")));
  }
  if (options.local_rank < 0 || options.local_rank >= count) {
    return RuntimeError(fmt::format(
        "local rank {} has no GPU of its own: {} visible (one process per GPU: launch at most {} "
        "ranks per node, or set CUDA_VISIBLE_DEVICES)",
        options.local_rank, count, count));
  }
  SS_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaDevice> d,
                      cuda::CudaDevice::Create(options.local_rank, options.memory_limit_bytes));
  return std::unique_ptr<Device>(std::move(d));
}

}  // namespace shardscope::backend
