// The CPU runtime's promises: digests verified at load, content-addressed cache
// that detects tampering and survives concurrent builders, shape guards, and
// no silent fallback when native execution is impossible.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "e2e_util.hpp"
#include "ir/parser.hpp"
#include "passes/pipeline.hpp"
#include "runtime/cpu_module_cache.hpp"

namespace tessera::test {
namespace {

namespace fs = std::filesystem;

ir::KernelDesc first_kernel() {
  GraphBuilder g("rt");
  g.output(g.reduce(g.input("x", ir::Type::tensor(DType::F32, {8, 40})), "sum", {1}));
  auto target = passes::lower(g.module(), ir::Layer::Target, "cpu");
  for (auto& op : target->ops)
    if (op->name == "target.kernel") return ir::read_kernel_desc(*op);
  throw std::runtime_error("no kernel");
}

std::string fresh_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("tessera-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d.string();
}

TEST(Runtime, RefusesSourceThatDoesNotMatchItsDigest) {
  runtime::CpuModuleCache cache(fresh_dir("digest"));
  ir::KernelDesc k = first_kernel();
  k.source += "\n// edited";
  try {
    cache.load(k);
    FAIL() << "an edited kernel was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E701");
  }
  EXPECT_EQ(cache.stats().compiled, 0);
}

TEST(Runtime, CachesByContentAndLoadsOncePerProcess) {
  std::string dir = fresh_dir("once");
  ir::KernelDesc k = first_kernel();
  runtime::CpuModuleCache a(dir);
  EXPECT_NE(a.load(k), nullptr);
  EXPECT_NE(a.load(k), nullptr);
  EXPECT_EQ(a.stats().compiled, 1);
  EXPECT_EQ(a.stats().hits, 1);
  runtime::CpuModuleCache b(dir);  // a second process: a disk hit, no compile
  b.load(k);
  EXPECT_EQ(b.stats().compiled, 0);
  EXPECT_EQ(b.stats().hits, 1);
}

TEST(Runtime, RebuildsTamperedOrCorruptEntries) {
  std::string dir = fresh_dir("tamper");
  ir::KernelDesc k = first_kernel();
  std::string entry;
  {
    runtime::CpuModuleCache a(dir);
    a.load(k);
    entry = a.entry_dir(k);
  }
  for (const char* victim : {"kernel.so", "entry.json", "kernel.cpp"}) {
    {
      std::ofstream f(fs::path(entry) / victim, std::ios::binary | std::ios::app);
      f << "tampered";
    }
    runtime::CpuModuleCache b(dir);
    auto fn = b.load(k);
    EXPECT_EQ(b.stats().rebuilt, 1) << victim;
    // and the rebuilt kernel computes
    Tensor x = generate_input("iota", DType::F32, {8, 40}), y = Tensor::empty(DType::F32, {8});
    void* bufs[] = {x.data(), y.data()};
    fn(bufs, 0, 8);
    EXPECT_EQ(y.get(0), 780.0) << victim;  // 0 + 1 + ... + 39
  }
}

TEST(Runtime, ConcurrentBuildersPublishOneValidEntry) {
  std::string dir = fresh_dir("race");
  ir::KernelDesc k = first_kernel();
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i)
    ts.emplace_back([&] {
      runtime::CpuModuleCache c(dir);  // separate caches: like separate processes
      if (c.load(k)) ++ok;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(ok.load(), 4);
  int entries = 0, leftovers = 0;
  for (auto& e : fs::directory_iterator(fs::path(dir) / "cpu")) {
    std::string n = e.path().filename().string();
    if (n.rfind("tmp-", 0) == 0 || n.rfind("trash-", 0) == 0) ++leftovers;
    else ++entries;
  }
  EXPECT_EQ(entries, 1);
  EXPECT_EQ(leftovers, 0);
  runtime::CpuModuleCache after(dir);
  after.load(k);
  EXPECT_EQ(after.stats().rebuilt, 0);
}

TEST(Runtime, LeadingIncludesAreWholeBlocksBeforeTheCode) {
  EXPECT_EQ(runtime::leading_includes("// a comment\n\n#include <cmath>\n#if defined(X)\n#include <immintrin.h>\n"
                                      "#endif\nnamespace tsr {}\n#include <vector>\n"),
            "#include <cmath>\n#if defined(X)\n#include <immintrin.h>\n#endif\n");
  // An #if block holding code is not a header block: cut before it.
  EXPECT_EQ(runtime::leading_includes("#include <cstdint>\n#if A\nint a;\n#endif\n"), "#include <cstdint>\n");
  // Whole blocks only: an #else outside one, or an unclosed #if, ends it.
  EXPECT_EQ(runtime::leading_includes("#include <a>\n#else\n#include <b>\n"), "#include <a>\n");
  EXPECT_EQ(runtime::leading_includes("#include <a>\n#if A\n#include <b>\n"), "#include <a>\n");
  EXPECT_EQ(runtime::leading_includes("#if A\n#if B\n#include <b>\n#endif\n#else\n#include <c>\n#endif\nint x;\n"),
            "#if A\n#if B\n#include <b>\n#endif\n#else\n#include <c>\n#endif\n");
  EXPECT_EQ(runtime::leading_includes("extern \"C\" void f() {}\n"), "");
  EXPECT_EQ(runtime::leading_includes(""), "");
}

// Kernels share one precompiled header of their standard headers, an entry of
// its own; a compiler that cannot precompile it still builds every kernel.
TEST(Runtime, KernelsShareOnePrecompiledHeader) {
  const std::string dir = fresh_dir("pch");
  GraphBuilder g("pch");
  g.output(g.reduce(g.input("x", ir::Type::tensor(DType::F32, {8, 40})), "max", {1}));
  auto target = passes::lower(g.module(), ir::Layer::Target, "cpu");
  ir::KernelDesc k1 = first_kernel(), k2;
  for (auto& op : target->ops)
    if (op->name == "target.kernel") k2 = ir::read_kernel_desc(*op);
  runtime::CpuModuleCache a(dir);
  a.load(k1);
  a.load(k2);
  EXPECT_EQ(a.stats().compiled, 2);
  EXPECT_EQ(a.header_stats().compiled, 1);
  int headers = 0;
  for (auto& e : fs::directory_iterator(fs::path(dir) / "cpu-headers")) {
    ++headers;
    EXPECT_TRUE(fs::exists(e.path() / "prelude.hpp.gch")) << e.path();
  }
  EXPECT_EQ(headers, 1);
  // and GCC used it (-Winvalid-pch would have logged why not)
  for (const ir::KernelDesc* k : {&k1, &k2}) {
    std::ifstream log(fs::path(a.entry_dir(*k)) / "compile.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("prelude.hpp.gch"), std::string::npos) << text;
  }

  // A host compiler that refuses to precompile: the kernel compiles from text.
  const fs::path wrapper = fs::path(fresh_dir("nopch-cxx"));
  fs::create_directories(wrapper);
  {
    std::ofstream w(wrapper / "c++");
    w << "#!/bin/sh\nfor a; do [ \"$a\" = c++-header ] && exit 1; done\nexec g++ \"$@\"\n";
  }
  fs::permissions(wrapper / "c++", fs::perms::owner_all);
  ::setenv("TESSERA_CXX", (wrapper / "c++").c_str(), 1);
  const std::string nopch = fresh_dir("nopch");
  runtime::CpuModuleCache b(nopch);
  ::unsetenv("TESSERA_CXX");
  auto fn = b.load(k1);
  EXPECT_EQ(b.stats().compiled, 1);
  EXPECT_TRUE(fs::is_empty(fs::path(nopch) / "cpu-headers"));  // the failed build left nothing
  Tensor x = generate_input("iota", DType::F32, {8, 40}), y = Tensor::empty(DType::F32, {8});
  void* bufs[] = {x.data(), y.data()};
  fn(bufs, 0, 8);
  EXPECT_EQ(y.get(0), 780.0);  // 0 + 1 + ... + 39
}

TEST(Runtime, NoHostCompilerFailsClosed) {
  ::setenv("TESSERA_CXX", "/nonexistent/c++", 1);
  runtime::CpuModuleCache cache(fresh_dir("nocxx"));
  ::unsetenv("TESSERA_CXX");
  try {
    cache.load(first_kernel());
    FAIL() << "loaded without a compiler";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E702");
  }
}

TEST(Runtime, ShapeGuardsRejectWrongInputs) {
  Program p = reduce_program({8, 40}, DType::F32, "sum", {1}, false);
  auto code_of = [&](const std::vector<Tensor>& in) {
    try {
      p.run(in);
    } catch (const Error& e) {
      return e.code();
    }
    return std::string("none");
  };
  EXPECT_EQ(code_of({Tensor::empty(DType::F32, {8, 41})}), "E611");
  EXPECT_EQ(code_of({Tensor::empty(DType::F64, {8, 40})}), "E611");
  EXPECT_EQ(code_of({Tensor::empty(DType::F32, {40, 8})}), "E611");
  EXPECT_EQ(code_of({}), "E610");
  EXPECT_EQ(code_of({Tensor::empty(DType::F32, {8, 40})}), "none");
}

// The benchmark split on the CPU: each launch of a binding is one run, the
// same results and records as run(); a binding made by another executable is
// refused (E614), as is a bad input at bind time (E611).
TEST(Runtime, BindLaunchFinishIsARun) {
  Program p = reduce_program({8, 40}, DType::F32, "sum", {1}, false);
  Program q = reduce_program({8, 40}, DType::F32, "sum", {1}, false);
  const Tensor x = generate_input("random:seed=3", DType::F32, {8, 40});
  const runtime::Executable& exe = p.executable();
  runtime::RunResult once = exe.run({x});
  std::unique_ptr<runtime::Binding> b = exe.bind({x});
  for (int i = 0; i < 2; ++i) {
    exe.launch(*b, runtime::Timing::each_kernel);
    std::vector<runtime::LaunchRecord> recs = exe.finish(*b);
    ASSERT_EQ(recs.size(), once.launches.size());
    for (size_t l = 0; l < recs.size(); ++l) {
      EXPECT_EQ(recs[l].placement, "native_cpu");
      EXPECT_EQ(recs[l].sha256, once.launches[l].sha256);
    }
    std::vector<Tensor> out = exe.outputs(*b);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(std::memcmp(out[0].data(), once.outputs[0].data(), out[0].nbytes()), 0);
  }
  try {
    q.executable().launch(*b, runtime::Timing::none);
    FAIL() << "a foreign binding was launched";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E614");
  }
  try {
    exe.bind({Tensor::empty(DType::F32, {8, 41})});
    FAIL() << "a wrong shape was bound";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "E611");
  }
}

TEST(Runtime, SynthesisIsDeterministic) {
  auto source = [] {
    Program p = reduce_program({3, 5, 7}, DType::BF16, "mean", {0, 2}, true);
    return p.emit("target");
  };
  EXPECT_EQ(source(), source());
}

}  // namespace
}  // namespace tessera::test
