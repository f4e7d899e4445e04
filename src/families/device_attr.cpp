#include "families/device_attr.hpp"

#include "ir/schedule_dialect.hpp"

namespace tessera::families {

void record_device(ir::AttrDict& attrs, const machine::Descriptor& device) {
  attrs["target"] = std::string(device.target());
  attrs["device"] = device.str();
}

machine::Descriptor read_device(const ir::Op& op) {
  const std::string text = ir::string_attr(op, "device");
  machine::Descriptor d;
  try {
    d = machine::parse(text);
  } catch (const Error& e) {
    fail("E302", "'" + op.name + "': " + e.message(), op.loc);
  }
  if (ir::string_attr(op, "target") != d.target())
    fail("E302", "'" + op.name + "': target '" + ir::string_attr(op, "target") + "' but a " + d.target() + " device",
         op.loc);
  return d;
}

void check_threads(const ir::Op& op, const machine::Descriptor& device, int64_t threads) {
  if (threads > device.max_threads)
    fail("E302",
         "'" + op.name + "': " + std::to_string(threads) + " threads a program, but a block of " + device.name +
             " holds " + std::to_string(device.max_threads),
         op.loc);
}

}  // namespace tessera::families
