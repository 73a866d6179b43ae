#include "core/util/did_you_mean.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "core/util/ascii_case.h"

namespace shardscope {
namespace {}  // namespace

size_t EditDistance(std::string_view a_in, std::string_view b_in) {
  const std::string a = AsciiLower(a_in);
  const std::string b = AsciiLower(b_in);
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> ClosestNames(std::string_view name,
                                      const std::vector<std::string>& candidates,
                                      size_t max_results) {
  const std::string lower = AsciiLower(name);
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& c : candidates) {
    const std::string lc = AsciiLower(c);
    size_t d = EditDistance(lower, lc);
    // "h100" names two catalog entries: containment is as good a hint as a small typo, and a
    // name the candidate begins with is a better one ("gb200" is gb200-nvl72 before b200).
    const size_t at = lower.empty() ? std::string::npos : lc.find(lower);
    const bool contains =
        at != std::string::npos || (!lower.empty() && lower.find(lc) != std::string::npos);
    if (contains) d = std::min(d, limit);
    if (at == 0 && lc.size() > lower.size()) d = 0;
    if (d <= limit) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < max_results; ++i)
    out.push_back(scored[i].second);
  return out;
}

std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::vector<std::string> close = ClosestNames(name, candidates);
  if (close.empty()) return "";
  std::string out = " (did you mean ";
  for (size_t i = 0; i < close.size(); ++i) {
    if (i > 0) out += i + 1 == close.size() ? " or " : ", ";
    out += close[i];
  }
  return out + "?)";
}

}  // namespace shardscope
