// Tests for src/runtime/npy.{hpp,cpp}: round trips, byte fixtures in the
// layout numpy writes, one crafted file per error code, and a mutation fuzz
// that checks garbage only ever produces tessera::Error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "runtime/npy.hpp"
#include "support/diagnostic.hpp"

namespace tessera {
namespace {

// This process's files live in one directory under the gtest temp dir,
// removed at exit; the pid keeps concurrent runs apart.
struct ScratchDir {
  std::string path = testing::TempDir() + "tessera_npy_" + std::to_string(getpid());
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// A per-test file name in the scratch directory.
std::string temp_path(const std::string& name) {
  static ScratchDir dir;
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  return dir.path + "/" + info->name() + "_" + name;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A .npy image: preamble for `major`, `dict` padded with spaces and '\n' so
// the data starts on an `align`-byte boundary (64 today, 16 in old numpy).
std::string npy_image(const std::string& dict, const std::string& data = "", int major = 1, std::size_t align = 64) {
  const std::size_t preamble = major == 1 ? 10 : 12;
  std::size_t len = dict.size() + 1;
  len += (align - (preamble + len) % align) % align;
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += dict;
  out.append(len - dict.size() - 1, ' ');
  out += '\n';
  return out + data;
}

std::string floats_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

const std::string kDict23 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
const std::vector<float> kData23 = {0, 1, 2, 3, 4, 5};

// Runs `fn`, expects a tessera::Error with `code`, returns its message.
std::string expect_error(const std::string& code, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.message();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected Error " << code << ", got std::exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected Error " << code << ", nothing was thrown";
  return "";
}

// Expects `image` (written to a file) to fail read_npy_any with `code`.
std::string expect_file_error(const std::string& code, const std::string& image, const std::string& name = "bad.npy") {
  const std::string path = temp_path(name);
  write_bytes(path, image);
  std::string msg = expect_error(code, [&] { read_npy_any(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << "message must name the file: " << msg;
  return msg;
}

Tensor sample(DType dtype, std::vector<int64_t> shape) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, 0.25 * static_cast<double>(i) - 3.0);
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// --- round trips -------------------------------------------------------------

TEST(Npy, RoundTripsEveryDtype) {
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Tensor t = sample(dt, {3, 4, 5});
    t.set(1, std::numeric_limits<double>::quiet_NaN());
    t.set(2, -std::numeric_limits<double>::infinity());
    const std::string path = temp_path(std::string(dtype_name(dt)) + ".npy");
    write_npy(path, t);
    EXPECT_TRUE(same_bytes(read_npy(path, dt, {3, 4, 5}), t));
    EXPECT_TRUE(same_bytes(read_npy_any(path), t));
  }
}

TEST(Npy, RoundTripsRankZero) {
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    Tensor t = Tensor::empty(dt, {});
    t.set(0, 1.5);
    const std::string path = temp_path("scalar.npy");
    write_npy(path, t);
    EXPECT_NE(read_bytes(path).find("'shape': (), }"), std::string::npos);
    Tensor back = read_npy(path, dt, {});
    EXPECT_EQ(back.rank(), 0);
    EXPECT_EQ(back.get(0), 1.5);
  }
}

TEST(Npy, RoundTripsZeroExtentShapes) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{0}, {3, 0, 2}}) {
    const std::string path = temp_path("empty.npy");
    write_npy(path, Tensor::empty(DType::F32, shape));
    Tensor back = read_npy(path, DType::F32, shape);
    EXPECT_EQ(back.shape(), shape);
    EXPECT_EQ(back.numel(), 0);
  }
}

TEST(Npy, WritesNumpyHeaderLayout) {
  const std::string path = temp_path("layout.npy");
  write_npy(path, sample(DType::F32, {2, 3}));
  const std::string bytes = read_bytes(path);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const std::size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u) << "data must start 64-byte aligned";
  EXPECT_EQ(bytes.size(), 10 + header_len + 6 * sizeof(float));
  EXPECT_EQ(bytes.substr(10, kDict23.size()), kDict23);
  EXPECT_EQ(bytes[10 + header_len - 1], '\n');

  write_npy(path, sample(DType::F64, {5}));
  EXPECT_NE(read_bytes(path).find("{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }"), std::string::npos);
  write_npy(path, sample(DType::F16, {1}));
  EXPECT_NE(read_bytes(path).find("'descr': '<f2'"), std::string::npos);
  write_npy(path, sample(DType::BF16, {1}));
  EXPECT_NE(read_bytes(path).find("'descr': '<u2'"), std::string::npos);
}

TEST(Npy, WriteToMissingDirectoryIsE120) {
  const std::string path = temp_path("no_such_dir") + "/x.npy";
  expect_error("E120", [&] { write_npy(path, sample(DType::F32, {2})); });
}

// --- byte fixtures in the layout numpy writes --------------------------------

void expect_23_f32(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.get(i), static_cast<double>(i));
}

TEST(Npy, ReadsModernNumpyFixture) {
  // np.save(f, np.arange(6, dtype='<f4').reshape(2, 3)) with numpy >= 1.23:
  // 20 spaces of growth room for shape[0], then padding to 128 bytes total.
  const std::string header = kDict23 + std::string(58, ' ') + "\n";
  ASSERT_EQ(header.size(), 118u);
  const std::string image = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + header + floats_bytes(kData23);
  const std::string path = temp_path("modern.npy");
  write_bytes(path, image);
  expect_23_f32(read_npy(path, DType::F32, {2, 3}));
}

TEST(Npy, ReadsLegacy16ByteAlignedFixture) {
  // Old numpy padded to 16 bytes: 10 + 70 = 80.
  const std::string header = kDict23 + std::string(10, ' ') + "\n";
  ASSERT_EQ(header.size(), 70u);
  const std::string image = std::string("\x93NUMPY\x01\x00\x46\x00", 10) + header + floats_bytes(kData23);
  const std::string path = temp_path("legacy.npy");
  write_bytes(path, image);
  expect_23_f32(read_npy(path, DType::F32, {2, 3}));
}

TEST(Npy, ReadsVersions2And3) {
  for (int major : {2, 3}) {
    const std::string path = temp_path("v" + std::to_string(major) + ".npy");
    write_bytes(path, npy_image(kDict23, floats_bytes(kData23), major));
    expect_23_f32(read_npy(path, DType::F32, {2, 3}));
  }
}

TEST(Npy, AcceptsHeaderSpellingVariants) {
  const std::vector<std::string> dicts = {
      "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}",                  // other order, no trailing comma
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",           // double quotes, no spaces
      "{ 'descr' : '=f4' ,\n\t'fortran_order' : False ,'shape' : ( 2 , 3 , ) , }",  // '=', whitespace, trailing commas
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",              // Python 2 longs
  };
  for (const std::string& d : dicts) {
    SCOPED_TRACE(d);
    const std::string path = temp_path("variant.npy");
    write_bytes(path, npy_image(d, floats_bytes(kData23)));
    expect_23_f32(read_npy(path, DType::F32, {2, 3}));
  }
}

TEST(Npy, ReadsRankZeroAndRankOneFixtures) {
  const std::string path = temp_path("r01.npy");
  write_bytes(path, npy_image("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                              std::string("\0\0\0\0\0\0\xf8\x3f", 8)));  // 1.5
  Tensor s = read_npy(path, DType::F64, {});
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.get(0), 1.5);
  // Rank 1 is both C and Fortran order, so fortran_order True is harmless.
  write_bytes(path, npy_image("{'descr': '<f4', 'fortran_order': True, 'shape': (6,), }", floats_bytes(kData23)));
  EXPECT_EQ(read_npy(path, DType::F32, {6}).get(5), 5.0);
}

TEST(Npy, ReadsBf16AsU2OrV2) {
  const std::string bits("\x80\x3f\x00\xc0", 4);  // bf16 1.0, -2.0
  for (const std::string descr : {"<u2", "|V2"}) {
    SCOPED_TRACE(descr);
    const std::string path = temp_path("bf16.npy");
    write_bytes(path, npy_image("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2,), }", bits));
    Tensor t = read_npy_any(path);
    EXPECT_EQ(t.dtype(), DType::BF16);
    EXPECT_EQ(t.get(0), 1.0);
    EXPECT_EQ(t.get(1), -2.0);
  }
}

TEST(Npy, IgnoresTrailingBytesAfterData) {
  const std::string path = temp_path("trailing.npy");
  write_bytes(path, npy_image(kDict23, floats_bytes(kData23) + "junk"));
  expect_23_f32(read_npy(path, DType::F32, {2, 3}));
}

// --- one crafted file per error code -----------------------------------------

TEST(NpyErrors, E410CannotOpen) {
  const std::string missing = temp_path("does_not_exist.npy");
  std::string msg = expect_error("E410", [&] { read_npy_any(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos);
  const std::string dir = temp_path("a_directory");
  std::filesystem::create_directory(dir);
  expect_error("E410", [&] { read_npy_any(dir); });
  std::filesystem::remove(dir);
}

TEST(NpyErrors, E411BadMagic) {
  expect_file_error("E411", "");
  expect_file_error("E411", "\x93NUM");
  expect_file_error("E411", "PK\x03\x04 this is a zip, not a .npy");
  std::string image = npy_image(kDict23, floats_bytes(kData23));
  image[1] = 'n';
  expect_file_error("E411", image);
}

TEST(NpyErrors, E412UnsupportedVersion) {
  std::string image = npy_image(kDict23, floats_bytes(kData23));
  image[6] = 4;
  EXPECT_NE(expect_file_error("E412", image).find("4.0"), std::string::npos);
  image[6] = 1;
  image[7] = 1;
  expect_file_error("E412", image);
  image[6] = 0;
  image[7] = 0;
  expect_file_error("E412", image);
}

TEST(NpyErrors, E413MalformedHeaders) {
  const std::string data = floats_bytes(kData23);
  const std::vector<std::string> dicts = {
      "",
      "{",
      "{}",
      "not a dict",
      "{'descr': '<f4', 'fortran_order': False}",                           // missing shape
      "{'descr': '<f4', 'shape': (2, 3)}",                                  // missing fortran_order
      "{'fortran_order': False, 'shape': (2, 3)}",                          // missing descr
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}",  // extra key
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3)}",  // negative dim
      "{'descr': '<f4', 'fortran_order': False, 'shape': (6)}",      // int, not a tuple
      "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}",   // list, not a tuple
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'a')}",
      "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}",
      "{'descr': 4, 'fortran_order': False, 'shape': (2, 3)}",
      "{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}",     // unterminated string
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x",  // text after the dict
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)",     // no closing brace
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}",
      "{'descr': '<f4', 'fortran_order': Fals, 'shape': (2, 3)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",  // 2^64 elements
      "{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,)}",    // 2^61 * 8 bytes
      "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(10000, '(') + ")}",
  };
  for (const std::string& d : dicts) {
    SCOPED_TRACE(d.substr(0, 100));
    expect_file_error("E413", npy_image(d, data));
  }
  // Preamble or header cut short, and a header length far beyond the file.
  const std::string good = npy_image(kDict23, data);
  expect_file_error("E413", good.substr(0, 7));
  expect_file_error("E413", good.substr(0, 9));
  expect_file_error("E413", good.substr(0, 40));
  std::string huge = npy_image(kDict23, data, 2);
  huge[8] = huge[9] = huge[10] = huge[11] = '\xff';  // 4 GiB header
  expect_file_error("E413", huge);
  std::string long_v1 = good;
  long_v1[8] = long_v1[9] = '\xff';  // 65535 bytes declared, fewer present
  expect_file_error("E413", long_v1);
}

TEST(NpyErrors, E414FortranOrder) {
  const std::string msg = expect_file_error(
      "E414", npy_image("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", floats_bytes(kData23)));
  EXPECT_NE(msg.find("Fortran order not supported; save with np.ascontiguousarray"), std::string::npos);
}

TEST(NpyErrors, E415DtypeMismatch) {
  const std::string path = temp_path("f32.npy");
  write_npy(path, sample(DType::F32, {2, 3}));
  const std::string msg = expect_error("E415", [&] { read_npy(path, DType::F16, {2, 3}); });
  EXPECT_NE(msg.find(path), std::string::npos);
  EXPECT_NE(msg.find("file has f32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("declared f16"), std::string::npos) << msg;
}

TEST(NpyErrors, E416ShapeMismatch) {
  const std::string path = temp_path("4x8.npy");
  write_npy(path, sample(DType::F32, {4, 8}));
  const std::string msg = expect_error("E416", [&] { read_npy(path, DType::F32, {4, 9}); });
  EXPECT_NE(msg.find(path), std::string::npos);
  EXPECT_NE(msg.find("4x8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4x9"), std::string::npos) << msg;
  expect_error("E416", [&] { read_npy(path, DType::F32, {32}); });
  expect_error("E416", [&] { read_npy(path, DType::F32, {}); });
}

TEST(NpyErrors, E417TruncatedData) {
  const std::string data = floats_bytes(kData23);
  const std::string msg = expect_file_error("E417", npy_image(kDict23, data.substr(0, 20)));
  EXPECT_NE(msg.find("expected 24 bytes, file has 20"), std::string::npos) << msg;
  expect_file_error("E417", npy_image(kDict23));
}

TEST(NpyErrors, E418UnsupportedDescr) {
  for (const std::string descr : {">f4", ">u2", "<u4", "<i2", "|u1", "|f2", "<c8", "<V2", "<f16", "f4"}) {
    SCOPED_TRACE(descr);
    expect_file_error("E418", npy_image("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (2, 3), }",
                                        floats_bytes(kData23)));
  }
  expect_file_error(
      "E418", npy_image("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", floats_bytes(kData23)));
}

// --- robustness ----------------------------------------------------------------

// Every prefix of a valid file, and many single-byte corruptions of it, must
// either read or throw tessera::Error -- never crash, hang or throw anything else.
TEST(NpyFuzz, TruncationsAndByteFlipsOnlyThrowError) {
  const std::string good = npy_image(kDict23, floats_bytes(kData23));
  const std::string path = temp_path("fuzz.npy");
  for (std::size_t n = 0; n < good.size(); ++n) {
    write_bytes(path, good.substr(0, n));
    EXPECT_THROW(read_npy_any(path), Error) << "prefix of " << n << " bytes";
  }
  const char replacements[] = {'\0', '\xff', '(', ')', ',', '\'', '-', '9', '{', '}', ' ', 'L', '\n'};
  uint32_t state = 12345;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string bad = good;
    for (int k = 0; k < 1 + iter % 3; ++k) {
      state = state * 1664525u + 1013904223u;      // LCG: reproducible mutations
      const std::size_t pos = (state >> 8) % 128;  // preamble and header
      bad[pos] = replacements[(state >> 24) % sizeof(replacements)];
    }
    write_bytes(path, bad);
    try {
      read_npy_any(path);
    } catch (const Error&) {
    } catch (...) {
      ADD_FAILURE() << "non-Error exception at iteration " << iter;
    }
  }
}

}  // namespace
}  // namespace tessera
