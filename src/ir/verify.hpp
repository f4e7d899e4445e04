#pragma once
#include <string>

#include "ir/ir.hpp"

namespace tessera::ir {

enum class Layer { Graph, Schedule, Tile, Target };
const char* layer_name(Layer l);
// The layer a module is at, from the dialects it uses (E100-range error if mixed).
Layer detect_layer(const Module& m);
void verify(const Module& m, Layer l);

}  // namespace tessera::ir
