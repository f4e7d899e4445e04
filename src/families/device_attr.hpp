// Every schedule op records the lane it was scheduled for (`target`) and the
// descriptor of the machine whose facts its decisions used (`device`), so
// the artifact hash covers both and a reader sees what was assumed.
#pragma once
#include "ir/ir.hpp"
#include "machine/descriptor.hpp"

namespace tessera::families {

void record_device(ir::AttrDict& attrs, const machine::Descriptor& device);

// The recorded descriptor; E302 when it is missing, malformed, or of
// another lane than the op's `target`.
machine::Descriptor read_device(const ir::Op& schedule_op);

// E302 unless a program of `threads` threads fits a block of the device.
void check_threads(const ir::Op& schedule_op, const machine::Descriptor& device, int64_t threads);

}  // namespace tessera::families
