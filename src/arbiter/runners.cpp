// The arbiter's runners: one per lane that executes natively, measuring in the
// lane's primary timing domain (CPU: host wall time around each launch; CUDA:
// device events around each launch, inputs resident on the device).
#include <algorithm>

#include "arbiter/arbiter.hpp"
#include "targets/device_query.hpp"
#include "targets/lane.hpp"

namespace tessera::arbiter {

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

Runner runner(const std::string& lane_name) {
  const targets::Lane& lane = targets::native(lane_name);  // E721 unless it runs here
  const targets::MeasuringIdentity id = lane.identity();
  Runner r;
  r.target = lane.name;
  r.device = id.device;
  r.machine = targets::describe_target(lane.name);  // the device as its driver reports it
  r.toolchain = id.toolchain;
  r.timing_domain = lane.primary_timing_domain();
  r.run = [&lane](const ir::Module& target_ir, const std::vector<Tensor>& inputs, int reps) {
    std::unique_ptr<runtime::Executable> exe = lane.load(target_ir, "");
    std::unique_ptr<runtime::Binding> b = exe->bind(inputs);
    std::vector<double> times;
    for (int i = 0; i <= reps; ++i) {
      exe->launch(*b, runtime::Timing::each_kernel);
      double t = 0;
      for (const auto& l : exe->finish(*b))
        t += std::max(lane.device_clock ? l.device_event_ns : l.kernel_wall_ns, 0.0);
      if (i > 0) times.push_back(t);  // the first run warms caches
    }
    Runner::Measured m;
    m.median_ns = median(times);
    m.outputs = exe->outputs(*b);
    return m;
  };
  return r;
}

Runner cpu_runner() { return runner("cpu"); }
Runner cuda_runner() { return runner("cuda"); }

}  // namespace tessera::arbiter
