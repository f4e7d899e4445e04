// .npy format reference: numpy/lib/format.py ("NEP 1"). A file is
//   "\x93NUMPY" major minor  header_len (u16 LE for 1.x, u32 LE for 2.x/3.x)
//   header: a Python dict literal, space padded, '\n' terminated
//   raw array bytes
// 3.0 only differs from 2.0 in allowing UTF-8 in the header, which matters for
// structured-dtype field names only, so the two are read the same way.
#include "runtime/npy.hpp"

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include "support/atomic_file.hpp"
#include "support/diagnostic.hpp"
#include "support/file_read.hpp"

namespace tessera {
namespace {

static_assert(std::endian::native == std::endian::little,
              "npy.cpp reads '<' and '=' data in place, which needs a little-endian host");

constexpr std::string_view kMagic{"\x93NUMPY", 6};
// numpy itself refuses headers over 10000 bytes by default; anything near our
// limit is garbage, and the cap keeps a corrupt length from allocating GiBs.
constexpr uint64_t kMaxHeaderLen = 1 << 20;
// Nesting limit for tuples/lists, so "((((((..." cannot exhaust the stack.
constexpr int kMaxDepth = 32;

[[noreturn]] void fail_file(const char* code, const std::string& path, const std::string& msg) {
  fail(code, path + ": " + msg);
}

std::string shape_str(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "() (scalar)";
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

// ---------------------------------------------------------------------------
// Header parsing: a small recursive-descent parser for the subset of Python
// literals that can appear in a .npy header: strings, ints, True/False/None,
// tuples and lists. Every failure is E413; it never reads past the text.

struct PyValue {
  enum class Kind { Str, Int, Bool, None, Tuple, List } kind = Kind::None;
  std::string str;
  int64_t num = 0;  // Int; Bool as 0/1
  std::vector<PyValue> items;
};

struct Header {
  std::string descr;  // empty when the descr was not a string (see descr_kind)
  PyValue::Kind descr_kind = PyValue::Kind::None;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  Header parse() {
    bool have_descr = false, have_order = false, have_shape = false;
    Header h;
    expect('{');
    while (!eat('}')) {
      skip_ws();
      if (peek() != '\'' && peek() != '"') syntax_error("expected a quoted key");
      std::string key = string_literal();
      expect(':');
      PyValue v = value(0);
      if (key == "descr") {
        if (have_descr) error("duplicate key 'descr'");
        have_descr = true;
        h.descr_kind = v.kind;
        if (v.kind == PyValue::Kind::Str) h.descr = v.str;
      } else if (key == "fortran_order") {
        if (have_order) error("duplicate key 'fortran_order'");
        if (v.kind != PyValue::Kind::Bool) error("'fortran_order' must be True or False");
        have_order = true;
        h.fortran_order = v.num != 0;
      } else if (key == "shape") {
        if (have_shape) error("duplicate key 'shape'");
        if (v.kind != PyValue::Kind::Tuple) error("'shape' must be a tuple");
        have_shape = true;
        for (const PyValue& d : v.items) {
          if (d.kind != PyValue::Kind::Int) error("'shape' must be a tuple of integers");
          if (d.num < 0) error("negative dimension " + std::to_string(d.num));
          h.shape.push_back(d.num);
        }
      } else {
        error("unexpected key '" + key + "'");  // numpy rejects extra keys too
      }
      if (!eat(',')) {  // a trailing comma before '}' is allowed, as in Python
        expect('}');
        break;
      }
    }
    skip_ws();  // padding: spaces and the final '\n'
    if (pos_ != text_.size()) syntax_error("unexpected text after the dict");
    if (!have_descr) error("missing key 'descr'");
    if (!have_order) error("missing key 'fortran_order'");
    if (!have_shape) error("missing key 'shape'");
    return h;
  }

 private:
  [[noreturn]] void error(const std::string& what) { fail_file("E413", path_, "malformed .npy header: " + what); }
  [[noreturn]] void syntax_error(const std::string& what) {
    error(what + (pos_ < text_.size() ? " at header offset " + std::to_string(pos_) : " at end of header"));
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) syntax_error(std::string("expected '") + c + "'");
  }

  PyValue value(int depth) {
    if (depth > kMaxDepth) syntax_error("nesting too deep");
    skip_ws();
    char c = peek();
    PyValue v;
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::Str;
      v.str = string_literal();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Kind::Int;
      v.num = integer();
    } else if (c == '(' || c == '[') {
      v = sequence(depth);
    } else {
      std::size_t start = pos_;
      while (std::isalpha(static_cast<unsigned char>(peek()))) ++pos_;
      std::string_view word = text_.substr(start, pos_ - start);
      if (word == "True" || word == "False") {
        v.kind = PyValue::Kind::Bool;
        v.num = word == "True";
      } else if (word == "None") {
        v.kind = PyValue::Kind::None;
      } else {
        pos_ = start;
        syntax_error("expected a value");
      }
    }
    return v;
  }

  // "(a, b)", "(a,)", "()" are tuples; "(a)" is just a; "[...]" is a list.
  PyValue sequence(int depth) {
    char close = peek() == '(' ? ')' : ']';
    PyValue seq;
    seq.kind = close == ')' ? PyValue::Kind::Tuple : PyValue::Kind::List;
    ++pos_;
    bool saw_comma = false;
    while (!eat(close)) {
      seq.items.push_back(value(depth + 1));
      if (eat(',')) {
        saw_comma = true;
      } else {
        expect(close);
        break;
      }
    }
    if (seq.kind == PyValue::Kind::Tuple && seq.items.size() == 1 && !saw_comma)
      return std::move(seq.items[0]);  // parenthesised expression, not a tuple
    return seq;
  }

  std::string string_literal() {
    char quote = text_[pos_++];
    std::string s;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') ++pos_;  // keep the escaped char as-is; enough for descr strings
      if (pos_ >= text_.size()) break;
      s += text_[pos_++];
    }
    if (pos_ >= text_.size()) syntax_error("unterminated string");
    ++pos_;
    return s;
  }

  int64_t integer() {
    bool negative = eat('-');
    skip_ws();  // Python allows "- 5"; harmless to accept
    if (!(peek() >= '0' && peek() <= '9')) syntax_error("expected digits");
    // Accumulate as a negative number so INT64_MIN fits; magnitude overflow is an error.
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      int digit = text_[pos_++] - '0';
      if (v < (std::numeric_limits<int64_t>::min() + digit) / 10) syntax_error("integer too large");
      v = v * 10 - digit;
    }
    if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 era headers: (3L, 4L)
    if (!negative) {
      if (v == std::numeric_limits<int64_t>::min()) syntax_error("integer too large");
      v = -v;
    }
    return v;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  const std::string& path_;
};

// ---------------------------------------------------------------------------

DType descr_to_dtype(const Header& h, const std::string& path) {
  if (h.descr_kind == PyValue::Kind::List)
    fail_file("E418", path, "structured dtypes are not supported (descr is a list)");
  if (h.descr_kind != PyValue::Kind::Str) fail_file("E413", path, "malformed .npy header: 'descr' must be a string");
  const std::string& d = h.descr;
  if (!d.empty() && d[0] == '>')
    fail_file("E418", path,
              "big-endian data ('" + d +
                  "') is not supported; "
                  "save with arr.astype(arr.dtype.newbyteorder('<'))");
  if (d == "<f2" || d == "=f2") return DType::F16;
  if (d == "<f4" || d == "=f4") return DType::F32;
  if (d == "<f8" || d == "=f8") return DType::F64;
  if (d == "<u2" || d == "=u2" || d == "|V2") return DType::BF16;  // raw bf16 bit patterns
  if (d == "|b1") return DType::I1;
  if (d == "<i4" || d == "=i4") return DType::I32;
  if (d == "<i8" || d == "=i8") return DType::I64;
  fail_file(
      "E418", path,
      "unsupported descr '" + d + "' (expected '<f2', '<f4', '<f8', '<u2'/'|V2' for bf16, '|b1', '<i4' or '<i8')");
}

std::string descr_for(DType t) {
  switch (t) {
    case DType::F16: return "<f2";
    case DType::BF16: return "<u2";
    case DType::F32: return "<f4";
    case DType::F64: return "<f8";
    case DType::I1: return "|b1";
    case DType::I32: return "<i4";
    case DType::I64: return "<i8";
  }
  return "?";
}

// Byte count of the array, or -1 when it would not fit in int64 (which also
// keeps Tensor::numel() from overflowing). Zero extents are skipped so
// absurd extents are rejected even when another extent is zero.
int64_t checked_nbytes(const std::vector<int64_t>& shape, int64_t elem_size) {
  int64_t n = elem_size;
  bool zero = false;
  for (int64_t d : shape) {
    if (d == 0) {
      zero = true;
      continue;
    }
    if (n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return zero ? 0 : n;
}

bool read_exact(RegularFile& in, char* dst, int64_t n) { return in.read(dst, n) == n; }

uint64_t read_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Tensor read_impl(const std::string& path, const DType* expected_dtype, const std::vector<int64_t>* expected_shape) {
  // A FIFO, directory or device is refused before any read could block.
  std::string why;
  std::optional<RegularFile> file = RegularFile::open(path, why);
  if (!file) fail_file("E410", path, "cannot open: " + why);
  RegularFile& in = *file;
  const int64_t file_size = in.size();

  // Preamble: magic (6), version (2), header length (2 or 4).
  unsigned char pre[12] = {};
  if (!read_exact(in, reinterpret_cast<char*>(pre), 6) || std::string_view(reinterpret_cast<char*>(pre), 6) != kMagic)
    fail_file("E411", path, "not a .npy file (missing \\x93NUMPY magic)");
  if (!read_exact(in, reinterpret_cast<char*>(pre + 6), 2))
    fail_file("E413", path, "malformed .npy header: file ends inside the preamble");
  const int major = pre[6], minor = pre[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    fail_file("E412", path,
              "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                  " (supported: 1.0, 2.0, 3.0)");
  const int len_bytes = major == 1 ? 2 : 4;
  if (!read_exact(in, reinterpret_cast<char*>(pre + 8), len_bytes))
    fail_file("E413", path, "malformed .npy header: file ends inside the preamble");
  const uint64_t header_len = read_le(pre + 8, len_bytes);
  if (header_len > kMaxHeaderLen)
    fail_file("E413", path,
              "malformed .npy header: header length " + std::to_string(header_len) + " exceeds the " +
                  std::to_string(kMaxHeaderLen) + "-byte limit");
  std::string text(header_len, '\0');
  if (!read_exact(in, text.data(), static_cast<int64_t>(header_len)))
    fail_file("E413", path,
              "malformed .npy header: file ends inside the header (" + std::to_string(header_len) + " bytes declared)");

  const Header h = HeaderParser(text, path).parse();
  const DType dtype = descr_to_dtype(h, path);
  const int64_t nbytes = checked_nbytes(h.shape, static_cast<int64_t>(dtype_size(dtype)));
  if (nbytes < 0) fail_file("E413", path, "malformed .npy header: shape " + shape_str(h.shape) + " is too large");
  // Fortran and C order coincide for rank <= 1, so a True flag there is harmless.
  if (h.fortran_order && h.shape.size() >= 2)
    fail_file("E414", path, "Fortran order not supported; save with np.ascontiguousarray");
  if (expected_dtype && dtype != *expected_dtype)
    fail_file("E415", path,
              "dtype mismatch: file has " + std::string(dtype_name(dtype)) + " ('" + h.descr + "'), declared " +
                  std::string(dtype_name(*expected_dtype)));
  if (expected_shape && h.shape != *expected_shape)
    fail_file("E416", path,
              "shape mismatch: file has " + shape_str(h.shape) + ", declared " + shape_str(*expected_shape));

  const int64_t data_offset = (major == 1 ? 10 : 12) + static_cast<int64_t>(header_len);
  const int64_t available = file_size - data_offset;  // >= 0: the header was read
  // Trailing bytes beyond the array are ignored, as numpy does.
  if (available < nbytes)
    fail_file("E417", path,
              "truncated data: expected " + std::to_string(nbytes) + " bytes, file has " + std::to_string(available));

  Tensor t = Tensor::empty(dtype, h.shape);
  // One read straight into the tensor: no staging copy (RegularFile::read
  // loops over the OS's per-call limit, so arrays over 2 GiB are fine).
  if (const int64_t got = in.read(t.data(), nbytes); got != nbytes)
    fail_file("E410", path,
              got < 0 ? std::string("read error: ") + std::strerror(errno)
                      : "read error after " + std::to_string(got) + " of " + std::to_string(nbytes) + " data bytes");
  return t;
}

}  // namespace

Tensor read_npy(const std::string& path, DType expected_dtype, const std::vector<int64_t>& expected_shape) {
  return read_impl(path, &expected_dtype, &expected_shape);
}

Tensor read_npy_any(const std::string& path) { return read_impl(path, nullptr, nullptr); }

void write_npy(const std::string& path, const Tensor& t) {
  if (!t.valid()) fail_file("E410", path, "cannot write a tensor without storage");

  // Same dict text numpy writes (keys sorted, repr'd values, trailing ", ").
  std::string shape = "(";
  for (std::size_t i = 0; i < t.shape().size(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i]);
  shape += t.shape().size() == 1 ? ",)" : ")";
  std::string dict = "{'descr': '" + descr_for(t.dtype()) + "', 'fortran_order': False, 'shape': " + shape + ", }";

  // Pad with spaces and end with '\n' so the data starts 64-byte aligned
  // (lets readers mmap the array in place). 1.0 if the length fits 16 bits.
  auto padded_len = [&](std::size_t preamble) {
    std::size_t total = preamble + dict.size() + 1;
    return dict.size() + 1 + (64 - total % 64) % 64;
  };
  int major = 1;
  std::size_t header_len = padded_len(10);
  if (header_len > 0xffff) {
    major = 2;
    header_len = padded_len(12);
  }
  std::string out(kMagic);
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';

  // Beside the target, then renamed over it: a full disk leaves the previous file as it was (E120).
  AtomicFile f(path);
  f.write(out);
  f.write(t.data(), t.nbytes());
  f.commit();
}

}  // namespace tessera
