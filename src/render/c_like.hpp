// The shared base of the C-family renderers (C++ now; CUDA, HIP and MSL share
// it). It walks a tile.kernel and prints one statement per op as calls into the
// target's device tile library (tsr::load, tsr::combine_max, ...). A target
// supplies a table of type spellings and the few hooks that differ: the
// prelude, the kernel signature, and how a program id is obtained.
#pragma once
#include <string>
#include <unordered_map>

#include "ir/ir.hpp"

namespace tessera::render {

class CLikeRenderer {
 public:
  virtual ~CLikeRenderer() = default;
  // Complete, self-contained source for one tile.kernel: prelude + kernel.
  std::string render_kernel(const ir::Op& kernel);
  // Whether the renderer has an emitter for the Tile IR op `op_name` (each op
  // of the table has one; tests/unit/test_tile_ops.cpp).
  static bool has_emitter(const std::string& op_name);

 protected:
  struct Spelling {
    std::string f16, bf16, f32, f64;  // scalar/storage spellings
    std::string index;
    std::string i1, i32, i64;  // i1: one byte holding 0 or 1
  };
  virtual const Spelling& spelling() const = 0;
  virtual std::string prelude() const = 0;                    // tile library etc.
  virtual std::string kernel_open(const ir::Op& kernel) = 0;  // signature + program loop
  virtual std::string kernel_close(const ir::Op& kernel) = 0;
  virtual std::string program_id_expr() const = 0;
  virtual std::string alloca_decl(const std::string& name, const std::string& elem, int64_t size) const = 0;
  // The kernel's tile.workspace (E502 where the target keeps none).
  virtual std::string workspace_decl(const std::string& name, const std::string& elem) const;
  // The target's matmul block library, embedded after the prelude only into
  // kernels that contain tile.matmul (other kernels' sources do not change);
  // `kernel` lets a target add a variant's code only where a block uses it.
  virtual std::string matmul_library(const ir::Op& kernel) const = 0;
  // What a kernel without tile.matmul needs for tile.load2d / tile.store2d
  // (slabs: [rows, cols] tiles); by default the matmul library, which has them.
  virtual std::string slab_library(const ir::Op& kernel) const { return matmul_library(kernel); }
  // The target's attention block library, likewise for tile.attention (E502
  // where the target has none).
  virtual std::string attention_library(const ir::Op& kernel) const;
  // Whether kernels can take tensor maps (the TMA form of tile.matmul, CUDA
  // only); tensor map i of a kernel is the parameter tensor_map_param(i).
  virtual bool has_tensor_maps() const { return false; }
  // Whether the tile library has transpose_block (tile.transpose; CUDA/HIP).
  virtual bool has_transpose_block() const { return false; }
  // Whether the matmul block takes an RMSNorm prologue (tile.matmul norm_eps: CPU, Metal, HIP).
  virtual bool has_matmul_norm() const { return false; }
  // Persistent programs with staged rows (tile.num_programs, tile.load_staged;
  // CUDA clusters): the expression for the number of programs running, or ""
  // where the target has none (the renderer then refuses both ops, E502).
  virtual std::string num_programs_expr() const { return ""; }
  static std::string tensor_map_param(size_t i) { return "tsr_tmap" + std::to_string(i); }
  // The tile library function that loads a whole tile from `ptr`.
  virtual std::string load_fn(const ir::Value*) const { return "load"; }
  // The suffix of a 64-bit integer literal: LL in C++ and CUDA; L in MSL,
  // which has no long long (its long is 64-bit).
  virtual std::string i64_suffix() const { return "LL"; }
  // The scratch (tile.alloca) as the matmul block takes it: its bytes.
  virtual std::string scratch_bytes(const std::string& v) const {
    return "reinterpret_cast<unsigned char*>(" + v + ")";
  }
  // A tile library call whose meaning depends on the thread's position in the
  // program (loads, stores, masks, lane reductions). CPU and CUDA read the
  // position from the library (threadIdx); Metal passes it in.
  virtual std::string lane_call(const std::string& fn, const std::string& args) const;

  // Helpers for subclasses.
  std::string name(const ir::Value* v);
  std::string type(const ir::Type& t) const;
  std::string storage(DType d) const;
  bool is_written(const ir::Op& kernel, const ir::Value* ptr) const;
  static bool contains(const ir::Op& kernel, const std::string& op_name);
  std::string number_literal(double v, DType d) const;

 private:
  // Prints one Tile IR op: an emitter per op of the op table, dispatched by
  // name (c_like.cpp).
  struct OpEmitter;
  void render_ops(const ir::Region& r, int indent);
  void render_op(const ir::Op& op, int indent);
  std::string out_;
  std::unordered_map<const ir::Value*, std::string> names_;
};

}  // namespace tessera::render
