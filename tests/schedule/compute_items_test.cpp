// ComputeItems (core/schedule/compute_items.h): ops that run the same work share one list, and
// a write to one op's items never shows in another's.
#include "core/schedule/compute_items.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/schedule/schedule_builder.h"
#include "core/trace/op_id_view.h"
#include "tests/schedule/test_model.h"

namespace shardscope::testing {
namespace {

ComputeItem Item(OpKind kind, int module) {
  ComputeItem item;
  item.kind = kind;
  item.module = module;
  return item;
}

TEST(ComputeItemsTest, CopiesShareOneListUntilOneIsWritten) {
  ComputeItems a = {Item(OpKind::kLinear, 1), Item(OpKind::kNorm, 2)};
  ComputeItems b = a;
  EXPECT_EQ(a.identity(), b.identity());
  b.push_back(Item(OpKind::kAttention, 3));
  EXPECT_NE(a.identity(), b.identity());
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(a[1].module, 2);
  EXPECT_EQ(b[2].module, 3);
  // A list nobody else holds is written in place.
  const void* before = b.identity();
  b.push_back(Item(OpKind::kLoss, 4));
  EXPECT_EQ(b.identity(), before);
  EXPECT_EQ(b.back().module, 4);
}

TEST(ComputeItemsTest, EmptyListsHaveNoIdentityAndReadAsEmptyVectors) {
  ComputeItems empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.identity(), nullptr);
  const std::vector<ComputeItem>& v = empty;
  EXPECT_TRUE(v.empty());
  ComputeItems cleared = {Item(OpKind::kLinear, 1)};
  cleared.clear();
  EXPECT_EQ(cleared.identity(), nullptr);
  EXPECT_EQ(ComputeItems(std::vector<ComputeItem>{}).identity(), nullptr);
}

// The builder gives every micro-batch's op of one unit, phase and chunk the same list, and
// ops of different work hold different lists (what PriceSchedule's memo keys on): only the
// forward's and the backward's copy-out of one unit run the same copy.
TEST(ComputeItemsTest, TheBuilderSharesEachChunksListAcrossMicroBatches) {
  for (const char* ac : {"none", "full", "selective_op:2"}) {
    SCOPED_TRACE(ac);
    Case setup = MixedPrecisionCase();
    setup.options.grad_accum = 3;
    setup.options.activation_checkpoint = *ParseActivationCheckpoint(ac, "test");
    const Built b = BuildAll(setup);
    // op_id without its micro-batch prefix → the lists its micro-batches' ops hold.
    std::map<std::string, std::set<const void*>> lists;
    std::map<const void*, std::set<std::string>> work_of_list;  // unit/what[:index]
    for (const ScheduleOp& op : b.schedule.ops) {
      if (op.items.empty()) continue;
      const std::string op_id = OpIdOf(b.schedule, op);
      const std::optional<OpIdView> id = ParseOpIdView(op_id);
      ASSERT_TRUE(id.has_value()) << op_id;
      const std::string key = std::string(OpPhaseName(id->phase)) + "/" + std::string(id->unit) +
                              "/" + std::string(id->what) + ":" + std::to_string(id->index);
      lists[key].insert(op.items.identity());
      work_of_list[op.items.identity()].insert(std::string(id->unit) + "/" + std::string(id->what) +
                                               ":" + std::to_string(id->index));
      // The phase's list: a backward chunk ends with a backward item, a forward runs none.
      if (id->what == op_what::kCompute) {
        const bool backward = id->phase == OpPhase::kBackward;
        EXPECT_EQ(op.items.back().backward, backward) << op_id;
        if (!backward) {
          for (const ComputeItem& item : op.items) EXPECT_FALSE(item.backward) << op_id;
        }
      }
    }
    int shared = 0;
    for (const auto& [key, identities] : lists) {
      EXPECT_EQ(identities.size(), 1u) << key << " has a list per micro-batch";
      ++shared;
    }
    EXPECT_GT(shared, 3);
    for (const auto& [list, work] : work_of_list) {
      EXPECT_EQ(work.size(), 1u) << *work.begin() << " shares its list with other work";
    }
  }
}

}  // namespace
}  // namespace shardscope::testing
