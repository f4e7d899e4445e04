#include "targets/lane.hpp"

namespace tessera::targets {

namespace {

std::string names_where(bool (*keep)(const Lane&)) {
  std::string out;
  for (const Lane* l : lanes())
    if (keep(*l)) out += (out.empty() ? "" : ", ") + l->name;
  return out;
}

[[noreturn]] void refuse_not_executable(const std::string& name) {
  fail("E721", "target '" + name + "' cannot execute in this build (native execution: " +
                   names_where([](const Lane& l) { return l.native(); }) + ")");
}

}  // namespace

const std::vector<const Lane*>& lanes() {
  static const std::vector<const Lane*> all = {&cpu_lane(), &cuda_lane(), &hip_lane(), &metal_lane()};
  return all;
}

const Lane* find(const std::string& name) {
  for (const Lane* l : lanes())
    if (l->name == name) return l;
  return nullptr;
}

const Lane& renderable(const std::string& name) {
  const Lane* l = find(name);
  if (!l || !l->render)
    fail("E506", "target '" + name + "' has no renderer in this build (available: " + names_where([](const Lane& x) {
                   return bool(x.render);
                 }) + ")");
  return *l;
}

const Lane& runnable(const std::string& name, bool emulate) {
  const Lane* l = find(name);
  if (emulate && (!l || l->execution != Execution::kEmulatedOnly))
    fail("E723", "--emulate applies to --target " +
                     names_where([](const Lane& x) { return x.execution == Execution::kEmulatedOnly; }) +
                     " only (MSL under the host emulation); '" + name + "' runs natively or not at all");
  if (!l) refuse_not_executable(name);
  if ((l->execution == Execution::kEmulatedOnly && !emulate) || l->execution == Execution::kCompileCheckOnly)
    fail(l->refusal.code, l->refusal.message);
  return *l;
}

const Lane& native(const std::string& name) {
  const Lane* l = find(name);
  if (!l || !l->native()) refuse_not_executable(name);
  return *l;
}

}  // namespace tessera::targets
