#include "sim/explore/vary.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "core/config/scenario.h"
#include "core/util/ascii_case.h"

namespace shardscope::sim {
namespace {

// Whether scenario path `inner` names a field inside the object at path `outer`.
bool Contains(std::string_view outer, std::string_view inner) {
  return inner.size() > outer.size() && inner.substr(0, outer.size()) == outer &&
         (inner[outer.size()] == '.' || inner[outer.size()] == '[');
}

// Splits on commas outside brackets, braces and double quotes.
std::vector<std::string> SplitItems(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\' && i + 1 < text.size()) {
        cur += c;
        cur += text[++i];
        continue;
      }
      if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(std::move(cur));
  return out;
}

bool LooksLikeRange(std::string_view item) {
  const size_t first = !item.empty() && item[0] == '-' ? 1 : 0;
  return item.size() > first && std::isdigit(static_cast<unsigned char>(item[first])) &&
         item.find("..") != std::string_view::npos;
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// Appends the values of range `item` to `values`; the error names what is wrong with it.
Status ExpandRange(std::string_view item, std::vector<std::string>* values) {
  auto bad = [&](std::string_view why) {
    return InvalidInput(fmt::format("range '{}': {}", item, why));
  };
  const size_t dots = item.find("..");
  const size_t colon = item.find(':', dots);
  const std::string_view lo_text = item.substr(0, dots);
  const std::string_view hi_text = item.substr(
      dots + 2, colon == std::string_view::npos ? std::string_view::npos : colon - dots - 2);
  int64_t lo = 0, hi = 0;
  if (!ParseInt(lo_text, &lo)) return bad(fmt::format("'{}' is not an integer", lo_text));
  if (!ParseInt(hi_text, &hi)) {
    return bad(fmt::format("expected an integer after '..', got '{}'", hi_text));
  }
  if (hi < lo) return bad(fmt::format("the end {} is below the start {}", hi, lo));
  char op = '+';
  int64_t step = 1;
  if (colon != std::string_view::npos) {
    const std::string_view step_text = item.substr(colon + 1);
    if (step_text.empty() || (step_text[0] != '+' && step_text[0] != 'x')) {
      return bad(fmt::format("expected a step ':+K' or ':xK' after the end, got ':{}'", step_text));
    }
    op = step_text[0];
    if (!ParseInt(step_text.substr(1), &step)) {
      return bad(fmt::format("the step '{}' is not '{}' followed by an integer", step_text, op));
    }
  }
  if (op == '+' && step < 1) return bad("the step after '+' must be an integer >= 1");
  if (op == 'x' && step < 2) return bad("the factor after 'x' must be an integer >= 2");
  if (op == 'x' && lo < 1) return bad("a geometric range must start at 1 or more");
  for (int64_t v = lo; v <= hi;) {
    if (static_cast<int64_t>(values->size()) >= kMaxAxisValues) {
      return bad(fmt::format("more than {} values", kMaxAxisValues));
    }
    values->push_back(std::to_string(v));
    if (op == 'x' ? v > hi / step : v > hi - step) break;  // the next one would pass hi
    v = op == 'x' ? v * step : v + step;
  }
  return Status::Ok();
}

// Whole numbers written as floats ("4.0") as integers, so that a value is known by what it is.
nlohmann::json Canonical(nlohmann::json j) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::abs(v) < 9.0e15) {
      return static_cast<int64_t>(v);
    }
  }
  if (j.is_object() || j.is_array()) {
    for (auto& item : j) item = Canonical(item);
  }
  return j;
}

}  // namespace

Result<VaryAxis> ParseVary(std::string_view text) {
  auto fail = [&](const std::string& why) {
    return InvalidInput(fmt::format("--vary {}: {}", text, why));
  };
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return fail("expected path=v1,v2,... or path=a..b[:+k|:xk], e.g. parallelism.tp=1,2,4,8");
  }
  VaryAxis axis;
  axis.flag = std::string(text);
  axis.path = std::string(text.substr(0, eq));
  for (const std::string& item : SplitItems(text.substr(eq + 1))) {
    if (item.empty()) return fail("empty value (two commas in a row, or a trailing comma)");
    if (LooksLikeRange(item)) {
      Status st = ExpandRange(item, &axis.values);
      if (!st.ok()) return fail(st.message());
    } else {
      axis.values.push_back(item);
    }
    if (static_cast<int64_t>(axis.values.size()) > kMaxAxisValues) {
      return fail(fmt::format("more than {} values", kMaxAxisValues));
    }
  }
  // The path and each value go through the one override rule of `--set`, so a key the
  // scenario lacks is refused here, with its suggestion, not once per combination.
  // A value twice would rank the same variant twice; compared as the scenario reads it, so
  // `4` and `4.0` are one value.
  std::set<std::string> seen;
  for (const std::string& v : axis.values) {
    nlohmann::json scratch = nlohmann::json::object();
    Status st = ApplyOverride(scratch, axis.path + "=" + v);
    if (!st.ok()) {
      std::string why = st.message();
      const std::string set_prefix = "--set " + axis.path + ": ";
      if (why.rfind(set_prefix, 0) == 0) why = why.substr(set_prefix.size());
      return fail(fmt::format("{}: {}", axis.path, why));
    }
    std::string key = Canonical(scratch).dump();
    // A GPU is named in any case (the catalog lookup ignores it): H100-SXM is h100-sxm.
    if (axis.path == "cluster.gpu") key = AsciiLower(key);
    if (!seen.insert(key).second) {
      return fail(fmt::format("the value '{}' is given twice", v));
    }
  }
  return axis;
}

Result<int64_t> CombinationCount(const std::vector<VaryAxis>& axes) {
  int64_t n = 1;
  for (size_t k = 0; k < axes.size(); ++k) {
    const VaryAxis& a = axes[k];
    for (size_t j = 0; j < k; ++j) {
      if (axes[j].path == a.path) {
        return InvalidInput(fmt::format(
            "--vary {}: {} is already an axis (--vary {}); give all its values in one --vary",
            a.flag, a.path, axes[j].flag));
      }
      // An object and a field inside it: the later axis would overwrite the earlier one's
      // value in every variant, which would still be labelled with it.
      const std::string_view outer = Contains(axes[j].path, a.path)   ? axes[j].path
                                     : Contains(a.path, axes[j].path) ? a.path
                                                                      : std::string_view();
      if (!outer.empty()) {
        const std::string_view inner = outer == a.path ? axes[j].path : a.path;
        return InvalidInput(fmt::format(
            "--vary {}: {} lies inside {}, and both are axes (--vary {}); vary {} whole, or its "
            "fields one by one",
            a.flag, inner, outer, axes[j].flag, outer));
      }
    }
    n *= static_cast<int64_t>(a.values.size());
    if (n > kMaxCombinations) {
      return InvalidInput(fmt::format(
          "--vary: the axes make more than {} combinations (at --vary {}); narrow a range",
          kMaxCombinations, a.flag));
    }
  }
  return n;
}

std::vector<std::string> CombinationSets(const std::vector<VaryAxis>& axes, int64_t index) {
  std::vector<std::string> sets(axes.size());
  for (size_t k = axes.size(); k-- > 0;) {
    const int64_t n = static_cast<int64_t>(axes[k].values.size());
    sets[k] = axes[k].path + "=" + axes[k].values[index % n];
    index /= n;
  }
  return sets;
}

}  // namespace shardscope::sim
