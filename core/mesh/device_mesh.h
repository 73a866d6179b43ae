// A named device mesh: an n-dimensional array of global ranks with a name per dim
// (planning.md §1.2), the way torch's DeviceMesh describes process groups.
//
// Contents:
//   DeviceMesh            dims + sizes + the ranks in row-major order (last dim fastest)
//     Create              a mesh over a contiguous rank range
//     GroupRanks          the ranks that share `rank`'s coordinates outside the given dims
//     Slice               the sub-mesh of the given dims that contains `rank`
//     Flatten             several adjacent dims merged into one named dim
//     Concatenate         two slices through one common rank combined into one mesh
//
// Example:
//   SS_ASSIGN_OR_RETURN(DeviceMesh m, DeviceMesh::Create({"dp", "tp"}, {4, 2}));
//   m.GroupRanks(5, {"dp"});   // {1, 3, 5, 7}
//   m.GroupRanks(5, {"tp"});   // {4, 5}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace shardscope {

class DeviceMesh {
 public:
  DeviceMesh() = default;

  // A mesh over ranks first_rank .. first_rank + prod(sizes) - 1, row-major. Errors: a size
  // below 1, an empty or duplicate dim name, names and sizes of different lengths.
  static Result<DeviceMesh> Create(std::vector<std::string> dim_names, std::vector<int> sizes,
                                   int first_rank = 0);

  const std::vector<std::string>& dim_names() const { return dim_names_; }
  const std::vector<int>& sizes() const { return sizes_; }
  // Every rank of the mesh, row-major.
  const std::vector<int>& ranks() const { return ranks_; }
  int ndim() const { return static_cast<int>(sizes_.size()); }
  // Number of ranks (product of the sizes; 1 for a 0-dim mesh).
  int size() const { return static_cast<int>(ranks_.size()); }
  // Index of the dim called `name`, or -1.
  int DimIndex(std::string_view name) const;
  bool HasDim(std::string_view name) const { return DimIndex(name) >= 0; }
  // Size of the dim called `name`; an error names the mesh's dims when absent.
  Result<int> DimSize(std::string_view name) const;
  bool Contains(int rank) const;
  // Coordinates of `rank` (error when the rank is not in the mesh).
  Result<std::vector<int>> Coordinates(int rank) const;

  // Ranks of `rank`'s group along `dims` (row-major over those dims, in the order given by
  // the mesh, not by `dims`). An empty `dims` gives {rank}.
  Result<std::vector<int>> GroupRanks(int rank, const std::vector<std::string>& dims) const;
  // The sub-mesh over `dims` (kept in the mesh's dim order) that contains `rank`.
  Result<DeviceMesh> Slice(int rank, const std::vector<std::string>& dims) const;
  // `dims` (adjacent, in mesh order) merged into one dim `name` of their product size.
  Result<DeviceMesh> Flatten(const std::vector<std::string>& dims, std::string name) const;
  // Combines two slices of one row-major parent that share exactly one rank (the anchor):
  // the result has a's dims then b's dims, and rank(ca, cb) = a(ca) + b(cb) - anchor. Dim
  // names must be disjoint and the combined ranks distinct.
  static Result<DeviceMesh> Concatenate(const DeviceMesh& a, const DeviceMesh& b);

  // "(dp=4, tp=2) ranks 0..7" for messages.
  std::string ToString() const;

 private:
  std::vector<std::string> dim_names_;
  std::vector<int> sizes_;
  std::vector<int> ranks_;
};

}  // namespace shardscope
