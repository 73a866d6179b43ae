#include "core/mesh/device_mesh.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

namespace shardscope {
namespace {

std::string DimsText(const std::vector<std::string>& names, const std::vector<int>& sizes) {
  std::string out = "(";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += fmt::format("{}={}", names[i], sizes[i]);
  }
  return out + ")";
}

// Row-major strides (last dim fastest).
std::vector<int> Strides(const std::vector<int>& sizes) {
  std::vector<int> strides(sizes.size(), 1);
  for (int i = static_cast<int>(sizes.size()) - 2; i >= 0; --i) {
    strides[static_cast<size_t>(i)] =
        strides[static_cast<size_t>(i) + 1] * sizes[static_cast<size_t>(i) + 1];
  }
  return strides;
}

}  // namespace

Result<DeviceMesh> DeviceMesh::Create(std::vector<std::string> dim_names, std::vector<int> sizes,
                                      int first_rank) {
  if (dim_names.size() != sizes.size()) {
    return InvalidInput(
        fmt::format("device mesh: {} dim names but {} sizes", dim_names.size(), sizes.size()));
  }
  std::set<std::string> seen;
  int64_t total = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (dim_names[i].empty()) return InvalidInput("device mesh: a dim name is empty");
    if (!seen.insert(dim_names[i]).second) {
      return InvalidInput(fmt::format("device mesh: dim name '{}' appears twice in {}",
                                      dim_names[i], fmt::join(dim_names, ", ")));
    }
    if (sizes[i] < 1) {
      return InvalidInput(
          fmt::format("device mesh: dim '{}' has size {} (expected >= 1)", dim_names[i], sizes[i]));
    }
    total *= sizes[i];
    if (total > (int64_t{1} << 30)) {
      return InvalidInput("device mesh: more than 2^30 ranks " + DimsText(dim_names, sizes));
    }
  }
  if (first_rank < 0) {
    return InvalidInput(fmt::format("device mesh: first rank {} is negative", first_rank));
  }
  DeviceMesh mesh;
  mesh.dim_names_ = std::move(dim_names);
  mesh.sizes_ = std::move(sizes);
  mesh.ranks_.resize(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i)
    mesh.ranks_[static_cast<size_t>(i)] = first_rank + static_cast<int>(i);
  return mesh;
}

int DeviceMesh::DimIndex(std::string_view name) const {
  for (size_t i = 0; i < dim_names_.size(); ++i) {
    if (dim_names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

Result<int> DeviceMesh::DimSize(std::string_view name) const {
  const int i = DimIndex(name);
  if (i < 0) {
    return InvalidInput(fmt::format("device mesh {} has no dim '{}'", ToString(), name));
  }
  return sizes_[static_cast<size_t>(i)];
}

bool DeviceMesh::Contains(int rank) const {
  return std::find(ranks_.begin(), ranks_.end(), rank) != ranks_.end();
}

Result<std::vector<int>> DeviceMesh::Coordinates(int rank) const {
  auto it = std::find(ranks_.begin(), ranks_.end(), rank);
  if (it == ranks_.end()) {
    return InvalidInput(fmt::format("rank {} is not in device mesh {}", rank, ToString()));
  }
  int flat = static_cast<int>(it - ranks_.begin());
  std::vector<int> coords(sizes_.size(), 0);
  for (int i = static_cast<int>(sizes_.size()) - 1; i >= 0; --i) {
    coords[static_cast<size_t>(i)] = flat % sizes_[static_cast<size_t>(i)];
    flat /= sizes_[static_cast<size_t>(i)];
  }
  return coords;
}

Result<DeviceMesh> DeviceMesh::Slice(int rank, const std::vector<std::string>& dims) const {
  std::vector<char> keep(sizes_.size(), 0);
  for (const std::string& d : dims) {
    const int i = DimIndex(d);
    if (i < 0) {
      return InvalidInput(fmt::format("device mesh {} has no dim '{}'", ToString(), d));
    }
    if (keep[static_cast<size_t>(i)]) {
      return InvalidInput(fmt::format("device mesh slice names dim '{}' twice", d));
    }
    keep[static_cast<size_t>(i)] = 1;
  }
  SS_ASSIGN_OR_RETURN(std::vector<int> coords, Coordinates(rank));
  DeviceMesh out;
  std::vector<int> kept_axes;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    if (!keep[i]) continue;
    out.dim_names_.push_back(dim_names_[i]);
    out.sizes_.push_back(sizes_[i]);
    kept_axes.push_back(static_cast<int>(i));
  }
  const std::vector<int> strides = Strides(sizes_);
  int base = 0;
  for (size_t i = 0; i < sizes_.size(); ++i) {
    if (!keep[i]) base += coords[i] * strides[i];
  }
  int64_t total = 1;
  for (int s : out.sizes_) total *= s;
  out.ranks_.reserve(static_cast<size_t>(total));
  std::vector<int> sub(out.sizes_.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    int flat = base;
    for (size_t k = 0; k < sub.size(); ++k) {
      flat += sub[k] * strides[static_cast<size_t>(kept_axes[k])];
    }
    out.ranks_.push_back(ranks_[static_cast<size_t>(flat)]);
    // Odometer increment, last dim fastest.
    for (int k = static_cast<int>(sub.size()) - 1; k >= 0; --k) {
      if (++sub[static_cast<size_t>(k)] < out.sizes_[static_cast<size_t>(k)]) break;
      sub[static_cast<size_t>(k)] = 0;
    }
  }
  return out;
}

Result<std::vector<int>> DeviceMesh::GroupRanks(int rank,
                                                const std::vector<std::string>& dims) const {
  SS_ASSIGN_OR_RETURN(DeviceMesh sub, Slice(rank, dims));
  return sub.ranks_;
}

Result<DeviceMesh> DeviceMesh::Flatten(const std::vector<std::string>& dims,
                                       std::string name) const {
  if (dims.empty()) return InvalidInput("device mesh flatten: no dims given");
  std::vector<int> idx;
  for (const std::string& d : dims) {
    const int i = DimIndex(d);
    if (i < 0) {
      return InvalidInput(fmt::format("device mesh {} has no dim '{}'", ToString(), d));
    }
    idx.push_back(i);
  }
  for (size_t k = 1; k < idx.size(); ++k) {
    if (idx[k] != idx[k - 1] + 1) {
      return InvalidInput(
          fmt::format("device mesh flatten: dims {} must be adjacent and in mesh order {}",
                      fmt::join(dims, ", "), ToString()));
    }
  }
  DeviceMesh out;
  int merged = 1;
  for (int i : idx) merged *= sizes_[static_cast<size_t>(i)];
  for (size_t i = 0; i < sizes_.size(); ++i) {
    const int ii = static_cast<int>(i);
    if (ii == idx.front()) {
      out.dim_names_.push_back(name);
      out.sizes_.push_back(merged);
    } else if (ii > idx.front() && ii <= idx.back()) {
      continue;
    } else {
      if (dim_names_[i] == name) {
        return InvalidInput(fmt::format("device mesh flatten: name '{}' is already a dim", name));
      }
      out.dim_names_.push_back(dim_names_[i]);
      out.sizes_.push_back(sizes_[i]);
    }
  }
  // Row-major with adjacent dims merged keeps the rank order unchanged.
  out.ranks_ = ranks_;
  return out;
}

Result<DeviceMesh> DeviceMesh::Concatenate(const DeviceMesh& a, const DeviceMesh& b) {
  for (const std::string& d : b.dim_names_) {
    if (a.HasDim(d)) {
      return InvalidInput(fmt::format("device mesh concatenate: dim '{}' is in both {} and {}", d,
                                      a.ToString(), b.ToString()));
    }
  }
  std::vector<int> common;
  for (int r : a.ranks_) {
    if (b.Contains(r)) common.push_back(r);
  }
  if (common.size() != 1) {
    return InvalidInput(fmt::format(
        "device mesh concatenate: {} and {} share {} ranks (expected exactly one anchor rank)",
        a.ToString(), b.ToString(), common.size()));
  }
  const int anchor = common.front();
  DeviceMesh out;
  out.dim_names_ = a.dim_names_;
  out.dim_names_.insert(out.dim_names_.end(), b.dim_names_.begin(), b.dim_names_.end());
  out.sizes_ = a.sizes_;
  out.sizes_.insert(out.sizes_.end(), b.sizes_.begin(), b.sizes_.end());
  out.ranks_.reserve(a.ranks_.size() * b.ranks_.size());
  std::set<int> seen;
  for (int ra : a.ranks_) {
    for (int rb : b.ranks_) {
      const int r = ra + rb - anchor;
      if (!seen.insert(r).second || r < 0) {
        return InvalidInput(
            fmt::format("device mesh concatenate: {} and {} are not slices of one row-major mesh",
                        a.ToString(), b.ToString()));
      }
      out.ranks_.push_back(r);
    }
  }
  return out;
}

std::string DeviceMesh::ToString() const {
  std::string out = DimsText(dim_names_, sizes_);
  if (ranks_.empty()) return out;
  const auto [lo, hi] = std::minmax_element(ranks_.begin(), ranks_.end());
  if (*hi - *lo + 1 == size()) return out + fmt::format(" ranks {}..{}", *lo, *hi);
  return out + fmt::format(" ranks {}", fmt::join(ranks_, ","));
}

}  // namespace shardscope
