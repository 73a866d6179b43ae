#include "backend/comm/mpi_groups.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace shardscope::backend {
namespace {

// The ranks of a key ("name|0,2,4#1" → {0, 2, 4}).
std::vector<int> RanksOfKey(const std::string& key) {
  std::vector<int> ranks;
  const size_t bar = key.rfind('|');
  std::string list = key.substr(bar + 1);
  if (const size_t hash = list.find('#'); hash != std::string::npos) list.resize(hash);
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) ranks.push_back(std::stoi(item));
  }
  return ranks;
}

std::string Describe(const std::string& key) {
  const size_t bar = key.rfind('|');
  return fmt::format("group '{}' over ranks [{}]", key.substr(0, bar),
                     fmt::join(RanksOfKey(key), ", "));
}

}  // namespace

std::string GroupKey(const ProcessGroup& group) {
  return fmt::format("{}|{}", group.name, fmt::join(group.ranks, ","));
}

Result<std::vector<MPI_Comm>> SplitGroups(std::span<const ProcessGroup> groups, int world_rank,
                                          int world_size) {
  // This rank's keys, a repeated group numbered so each gets a communicator of its own.
  std::vector<std::string> mine;
  std::map<std::string, int> repeats;
  for (const ProcessGroup& g : groups) {
    std::string key = GroupKey(g);
    if (const int k = repeats[key]++; k > 0) key += fmt::format("#{}", k);
    mine.push_back(key);
  }
  std::string text;
  for (const std::string& key : mine) text += key + "\n";

  // Everyone's lists.
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(world_size);
  if (MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD) !=
      MPI_SUCCESS) {
    return RuntimeError("exchanging the schedule groups over the world failed");
  }
  std::vector<int> offsets(world_size, 0);
  for (int r = 1; r < world_size; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::string all(static_cast<size_t>(offsets.back() + lengths.back()), '\0');
  if (MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                     MPI_CHAR, MPI_COMM_WORLD) != MPI_SUCCESS) {
    return RuntimeError("exchanging the schedule groups over the world failed");
  }
  std::map<std::string, std::set<int>> listed_by;  // key → ranks whose schedule lists it
  for (int r = 0; r < world_size; ++r) {
    std::stringstream ss(all.substr(offsets[r], lengths[r]));
    std::string key;
    while (std::getline(ss, key)) listed_by[key].insert(r);
  }

  // Every rank checks the same facts, so all of them fail together (no split is left waiting).
  for (const auto& [key, ranks] : listed_by) {
    const std::vector<int> members = RanksOfKey(key);
    for (int m : members) {
      if (m < 0 || m >= world_size) {
        return RuntimeError(fmt::format("{}: rank {} is outside the world of {} ranks",
                                        Describe(key), m, world_size));
      }
      if (!ranks.contains(m)) {
        return RuntimeError(fmt::format(
            "{} is in rank {}'s schedule but not in rank {}'s: the ranks' schedules disagree "
            "(were they all built from the same scenario?)",
            Describe(key), *ranks.begin(), m));
      }
    }
    for (int r : ranks) {
      if (!std::binary_search(members.begin(), members.end(), r)) {
        return RuntimeError(
            fmt::format("rank {}'s schedule lists {}, which does not hold it", r, Describe(key)));
      }
    }
  }

  std::map<std::string, MPI_Comm> made;
  for (const auto& [key, ranks] : listed_by) {
    const bool member = ranks.contains(world_rank);
    MPI_Comm comm = MPI_COMM_NULL;
    if (MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, world_rank, &comm) !=
        MPI_SUCCESS) {
      return RuntimeError(fmt::format("MPI_Comm_split for {} failed", Describe(key)));
    }
    if (member) {
      MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
      made[key] = comm;
    }
  }
  std::vector<MPI_Comm> out;
  for (const std::string& key : mine) out.push_back(made.at(key));
  return out;
}

}  // namespace shardscope::backend
