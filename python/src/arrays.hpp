// Arrays across the Python boundary, through DLPack and never copied: a
// caller's array (numpy, torch, CuPy, a previous result) in as a borrowed
// Tensor, a result out as an array of the caller's framework that owns it.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_executable.hpp"
#include "runtime/tensor.hpp"

namespace tessera::python {

// Which array library the caller uses: results are handed back in its type.
enum class Framework { Numpy, Torch, Cupy, Other };
Framework framework_of(nanobind::handle array);

// Where an array lives, from DLPack's device type.
enum class Place { Host, Cuda };

// A caller's array taken as-is. E934 (not an array), E931 (a device Tessera
// cannot use here), E932 (an element type Tessera lacks), E930 (not
// C-contiguous), E935 (a torch tensor autograd tracks); a copy is never made
// instead.
struct BorrowedArray {
  // Read-only: kernels never write their inputs, and numpy's read-only arrays
  // export only this way.
  nanobind::ndarray<nanobind::ro> array;
  Framework framework = Framework::Other;
  Place place = Place::Host;
  int device_id = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  void* data() const { return const_cast<void*>(array.data()); }
};
// `consumer_stream`: the CUDA stream the call launches on, when the caller
// named one; a CUDA array is then taken through the DLPack stream handshake
// (its producer's pending work is ordered before that stream). Without it,
// the call runs on the producer's stream (torch's current one) and no
// handshake is needed.
BorrowedArray borrow_array(nanobind::handle object, size_t position, std::optional<intptr_t> consumer_stream = {});

// A reference to the array that keeps it alive (taken without the GIL too).
std::shared_ptr<void> keep_alive(const BorrowedArray& a);
// A host tensor viewed without a copy; the array stays alive while it is.
Tensor host_tensor(const BorrowedArray& a);

// `t` as an array of `framework` that keeps t's storage alive: no copy.
nanobind::object export_host(const Tensor& t, Framework framework);
// The same for a result in CUDA memory on device `device_id`.
nanobind::object export_device(const runtime::cuda::DeviceTensor& t, int device_id, Framework framework);

}  // namespace tessera::python
