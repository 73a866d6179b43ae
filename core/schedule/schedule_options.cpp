#include "core/schedule/schedule_options.h"

#include <string>

namespace shardscope {

ScheduleOptions ScheduleOptionsFromScenario(const Scenario& scenario) {
  ScheduleOptions o;
  const TrainingConfig& t = scenario.training;
  o.local_batch = t.local_batch;
  o.seq_len = t.seq_len;
  o.grad_accum = t.grad_accum;
  o.activation_checkpoint = t.activation_checkpoint;
  o.implementation = scenario.model.implementation;
  o.optimizer = std::string(OptimizerName(t.optimizer));
  o.world_size = scenario.cluster.world_size();
  o.gpus_per_node = scenario.cluster.gpus_per_node;
  const ParallelismConfig& p = scenario.parallelism;
  o.pp = p.pp;
  o.dp_replicate = p.dp_replicate;
  o.dp_shard = p.dp_shard;
  o.cp = p.cp;
  o.tp = p.tp;
  o.ep = p.ep;
  o.sequence_parallel = p.sequence_parallel;
  o.loss_parallel = p.loss_parallel;
  o.pp_schedule = std::string(PpScheduleName(p.pp_schedule));
  o.pp_microbatches = p.pp_microbatches;
  o.pp_virtual_stages = p.pp_virtual_stages;
  o.reshard_after_backward = scenario.fsdp.reshard_after_backward;
  o.requires_grad_sync = scenario.fsdp.requires_grad_sync;
  return o;
}

Result<Schedule> BuildScenarioSchedule(const Scenario& scenario, const ModelTree& tree,
                                       const Plan& plan) {
  return BuildSchedule(tree, plan, ScheduleOptionsFromScenario(scenario));
}

}  // namespace shardscope
