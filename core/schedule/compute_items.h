// The work items of one compute op, shared by every op that runs the same work.
//
// A step repeats its work: each micro-batch runs every layer's forward and backward with the
// same items, and a pipeline's 64 micro-batches made a GPT-3-sized schedule hold 64 copies of
// each list of 216-byte items, allocated, copied and freed per simulation.
// ComputeItems holds one immutable list behind a shared pointer: copying an op copies a
// pointer, and the cost model prices a list once (PriceSchedule keys its memo on identity()).
// Writes copy the list first when another op shares it (copy on write), so an op's items
// read and change as a std::vector's would.
//
// Contents:
//   ComputeItem    one piece of work inside a compute op
//   ComputeItems   an op's items: a shared, copy-on-write std::vector<ComputeItem>
#pragma once

#include <initializer_list>
#include <memory>
#include <utility>
#include <variant>
#include <vector>

#include "core/model/descriptor.h"
#include "core/model/op_cost.h"
#include "core/model/op_work.h"

namespace shardscope {

// One piece of work inside a compute op: what to run (`work`, a typed description a backend
// executes at its shape: GEMM, attention, eager chain, optimizer step, FSDP copy; see
// core/model/op_work.h) and, for model modules, the figures it implies. No cost figures: the
// cost model (sim/cost) prices each item on its own (a large GEMM and a norm have different
// efficiencies; the optimizer's and the copies' traffic is the cost model's too).
struct ComputeItem {
  OpKind kind = OpKind::kLinear;  // the module's kind (module work only)
  Work work;
  // Module work: FiguresOf(work) (FLOPs, bytes, launches; per rank, one micro-batch) and the
  // module's memory sizes. Optimizer steps and FSDP copies: all zero.
  OpCost cost;
  bool backward = false;   // run / price the backward of the work instead of its forward
  bool recompute = false;  // forward work repeated in backward (activation checkpointing)
  int module = -1;         // index into Schedule::modules: the module's FQN or the work's name
  // Optimizer steps and FSDP copies are not model modules (no model FLOPs; `module` names
  // the work, e.g. "optimizer:model.layers.0", "fsdp_copy_out:model.layers.0").
  bool is_module() const {
    return !std::holds_alternative<OptimizerWork>(work) &&
           !std::holds_alternative<FsdpCopyWork>(work);
  }
};

// An op's items (see the top of the file).
class ComputeItems {
 public:
  using value_type = ComputeItem;
  using const_iterator = std::vector<ComputeItem>::const_iterator;

  ComputeItems() = default;
  ComputeItems(std::vector<ComputeItem> items)  // NOLINT: an op's items are assigned from lists
      : list_(items.empty() ? nullptr
                            : std::make_shared<std::vector<ComputeItem>>(std::move(items))) {}
  ComputeItems(std::initializer_list<ComputeItem> items)
      : ComputeItems(std::vector<ComputeItem>(items)) {}

  const std::vector<ComputeItem>& get() const { return list_ ? *list_ : Empty(); }
  operator const std::vector<ComputeItem>&() const { return get(); }  // NOLINT: reads as a vector

  const_iterator begin() const { return get().begin(); }
  const_iterator end() const { return get().end(); }
  size_t size() const { return list_ ? list_->size() : 0; }
  bool empty() const { return size() == 0; }
  const ComputeItem& operator[](size_t i) const { return (*list_)[i]; }
  const ComputeItem& front() const { return list_->front(); }
  const ComputeItem& back() const { return list_->back(); }

  void push_back(ComputeItem item) { Mutable().push_back(std::move(item)); }
  void clear() { list_.reset(); }

  // The same pointer for ops that share one list (null when empty): equal identities have
  // equal items.
  const void* identity() const { return list_.get(); }

 private:
  static const std::vector<ComputeItem>& Empty() {
    static const std::vector<ComputeItem> empty;
    return empty;
  }
  std::vector<ComputeItem>& Mutable() {
    if (!list_ || list_.use_count() > 1) {
      list_ =
          std::make_shared<std::vector<ComputeItem>>(list_ ? *list_ : std::vector<ComputeItem>{});
    }
    // Only this object holds the list, and every list is made as a non-const vector (the
    // constructor and the copy above), so writing through it is defined.
    return const_cast<std::vector<ComputeItem>&>(*list_);
  }

  std::shared_ptr<const std::vector<ComputeItem>> list_;
};

}  // namespace shardscope
