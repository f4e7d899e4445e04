// tessera._core.Dispatcher: the hot path of a jitted function's call. It
// takes the arrays once (DLPack, no copies), keys them by each one's device,
// dtype and shape, and runs the program compiled for that key, without going
// back through Python. A key it has not seen answers `MISS`; the Python side
// then traces and compiles, and adds the program here.
#include <nanobind/nanobind.h>

#include <unordered_map>
#include <vector>

#include "bindings.hpp"
#include "program.hpp"
#include "support/diagnostic.hpp"

namespace nb = nanobind;

namespace tessera::python {
namespace {

using Key = std::vector<int64_t>;  // per array: place, device id, dtype, rank, extents

struct KeyHash {
  size_t operator()(const Key& k) const {
    size_t h = k.size();
    for (int64_t v : k) h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

Key key_of(const std::vector<BorrowedArray>& arrays) {
  Key k;
  for (const BorrowedArray& a : arrays) {
    k.push_back(static_cast<int64_t>(a.place));
    k.push_back(a.device_id);
    k.push_back(static_cast<int64_t>(a.dtype));
    k.push_back(static_cast<int64_t>(a.shape.size()));
    k.insert(k.end(), a.shape.begin(), a.shape.end());
  }
  return k;
}

struct Dispatcher {
  struct Entry {
    nb::object program;   // a Program, kept alive here
    bool single = false;  // the function returned one tensor, not a tuple
  };
  std::unordered_map<Key, Entry, KeyHash> entries;
  nb::object last = nb::none();  // the Program of the last call
  int64_t hits = 0;

  // The results of the call, or `miss` when the arrays' key is new or they
  // cannot be taken as they are (the Python side then gives the error).
  nb::object call(nb::tuple arrays, nb::handle check_flag, nb::handle stream, nb::handle miss) {
    const int truth = PyObject_IsTrue(check_flag.ptr());  // any truthy value, as bool() takes it
    if (truth < 0) throw nb::python_error();
    const bool check = truth != 0;
    std::vector<BorrowedArray> in;
    try {
      in = borrow_call_arrays(arrays, stream);  // with a named stream, through the DLPack handshake
    } catch (const Error&) {
      return nb::borrow(miss);
    }
    const auto found = entries.find(key_of(in));
    if (found == entries.end()) return nb::borrow(miss);
    // Copies, not the entry: the run may release the GIL (or call Python), and
    // another thread's add() may rehash the map meanwhile.
    const nb::object held = found->second.program;
    const bool single = found->second.single;
    ++hits;
    last = held;
    PyProgram& program = nb::cast<PyProgram&>(held);
    const nb::tuple out = run_program(program, in, stream, check);
    return single ? nb::borrow(out[0]) : nb::object(out);
  }

  void add(nb::tuple arrays, nb::object program, bool single) {
    nb::cast<PyProgram&>(program);  // a Program or a TypeError
    entries[key_of(borrow_call_arrays(arrays, nb::none()))] = Entry{std::move(program), single};
  }
};

}  // namespace

void bind_dispatcher(nb::module_& m) {
  nb::class_<Dispatcher>(m, "Dispatcher", "A jitted function's programs by the arrays' device, dtype and shape.")
      .def(nb::init<>())
      .def("__call__", &Dispatcher::call, nb::arg("arrays"), nb::arg("check"), nb::arg("stream").none(),
           nb::arg("miss"), "The call's results, or `miss` when the arrays' key has no program (or an error).")
      .def("add", &Dispatcher::add, nb::arg("arrays"), nb::arg("program"), nb::arg("single"),
           "Runs `program` for arrays keyed as these are from now on.")
      .def("clear",
           [](Dispatcher& d) {
             d.entries.clear();
             d.last = nb::none();
             d.hits = 0;
           })
      .def_prop_ro("hits", [](const Dispatcher& d) { return d.hits; })
      .def_prop_ro("size", [](const Dispatcher& d) { return d.entries.size(); })
      .def_prop_rw(
          "last", [](const Dispatcher& d) { return d.last; },
          [](Dispatcher& d, nb::object program) { d.last = std::move(program); },
          "The Program of the last call (the Python side sets it for calls it served).");
}

}  // namespace tessera::python
