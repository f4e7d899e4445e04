#include "support/sha256.hpp"

#include <openssl/evp.h>

#include <memory>
#include <vector>

#include "support/file_read.hpp"

namespace tessera {
namespace {
std::string to_hex(const unsigned char* d, unsigned n) {
  static const char* k = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (unsigned i = 0; i < n; ++i) {
    s[2 * i] = k[d[i] >> 4];
    s[2 * i + 1] = k[d[i] & 15];
  }
  return s;
}
using Ctx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;
}  // namespace

std::string sha256_hex(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(data.data(), data.size(), out, &n, EVP_sha256(), nullptr);
  return to_hex(out, n);
}

std::string sha256_file_hex(const std::string& path) {
  std::string why;  // a FIFO or device is "unreadable", never read (it could block)
  auto in = RegularFile::open(path, why);
  if (!in) return "";
  Ctx ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 16);
  while (true) {
    const int64_t got = in->read(buf.data(), static_cast<int64_t>(buf.size()));
    if (got < 0) return "";
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(got));
    if (got < static_cast<int64_t>(buf.size())) break;
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &n);
  return to_hex(out, n);
}

}  // namespace tessera
