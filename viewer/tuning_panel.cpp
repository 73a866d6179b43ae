// The tuning panel (with --scenario): each change of a knob re-plans and re-simulates on the
// tuner's worker; the panel shows the state of that work, the planner's message when the
// combination is invalid, and saves the current scenario.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <string>
#include <vector>

#include "sim/hardware/hardware.h"
#include "viewer/panels.h"

namespace shardscope::viewer {
namespace {

bool Combo(const char* label, std::string* value, const std::vector<std::string>& options) {
  bool changed = false;
  if (ImGui::BeginCombo(label, value->c_str())) {
    for (const std::string& o : options) {
      if (ImGui::Selectable(o.c_str(), o == *value)) {
        changed = o != *value;
        *value = o;
      }
    }
    ImGui::EndCombo();
  }
  return changed;
}

bool IntKnob(const char* label, int* v, int lo) {
  const bool changed = ImGui::InputInt(label, v);
  if (*v < lo) *v = lo;
  return changed;
}

}  // namespace

void DrawTuningPanel(ViewerState* s) {
  if (!s->tuner) {
    ImGui::TextDisabled("Start with --scenario FILE to tune the prediction.");
    return;
  }
  static const std::vector<std::string> kCheckpoint = {"none", "selective_op", "selective_op:2",
                                                       "selective_layer:2", "full"};
  static const std::vector<std::string> kGpus = CatalogGpuNames();
  TuningKnobs k = s->knobs;
  bool changed = false;
  ImGui::PushItemWidth(110);
  changed |= IntKnob("forward prefetch", &k.forward_prefetch_depth, 0);
  changed |= IntKnob("backward prefetch", &k.backward_prefetch_depth, 0);
  changed |= ImGui::Checkbox("reshard after forward", &k.reshard_after_forward);
  if (k.reshard_after_forward) {
    changed |= IntKnob("reshard ranks (0 all)", &k.reshard_after_forward_ranks, 0);
  }
  int batch = static_cast<int>(k.local_batch);
  changed |= IntKnob("local batch", &batch, 1);
  k.local_batch = batch;
  changed |= Combo("checkpoint", &k.activation_checkpoint, kCheckpoint);
  changed |= IntKnob("dp_shard (-1 fill)", &k.dp_shard, -1);
  changed |= IntKnob("dp_replicate", &k.dp_replicate, 1);
  changed |= IntKnob("tp", &k.tp, 1);
  changed |= IntKnob("pp", &k.pp, 1);
  changed |= IntKnob("nodes", &k.nodes, 1);
  changed |= IntKnob("gpus per node", &k.gpus_per_node, 1);
  changed |= Combo("gpu", &k.gpu, kGpus);
  ImGui::PopItemWidth();
  if (changed && !(k == s->knobs)) {
    s->knobs = k;
    s->tuner->Request(k);
  }
  ImGui::Separator();
  if (s->tuner->busy()) {
    ImGui::TextUnformatted("re-planning and simulating...");
  } else if (!s->tuning_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 110, 110, 255));
    ImGui::TextWrapped("%s", s->tuning_error.c_str());
    ImGui::PopStyleColor();
    ImGui::TextDisabled("(the timeline keeps the last valid prediction)");
  } else if (s->tuning_generation > 0) {
    ImGui::Text("prediction #%llu in %.0f ms%s",
                static_cast<unsigned long long>(s->tuning_generation), 1000.0 * s->tuning_seconds,
                s->ghost ? "; the previous one is the ghost" : "");
  }
  ImGui::PushItemWidth(170);
  ImGui::InputText("##save_path", &s->save_path);
  ImGui::PopItemWidth();
  ImGui::SameLine();
  if (ImGui::Button("Save scenario")) {
    const Status st = s->tuner->WriteScenario(s->save_path, s->knobs);
    s->save_message = st.ok() ? "written to " + s->save_path : st.message();
  }
  if (!s->save_message.empty()) ImGui::TextWrapped("%s", s->save_message.c_str());
}

}  // namespace shardscope::viewer
