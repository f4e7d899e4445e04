#include "support/ed25519.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "support/diagnostic.hpp"
#include "support/sha256.hpp"

namespace tessera {

namespace {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Ctx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

Key read_key(const std::string& path, bool is_private) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("E863", "cannot read the " + std::string(is_private ? "private" : "public") + " key '" + path + "'");
  EVP_PKEY* k = is_private ? PEM_read_PrivateKey(f, nullptr, nullptr, nullptr)
                           : PEM_read_PUBKEY(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (!k)
    fail("E863", "'" + path + "' is not a PEM " + (is_private ? "private key" : "public key") +
                     (is_private ? "" : " (make one with `openssl pkey -in KEY.pem -pubout -out PUB.pem`)"));
  Key key(k, EVP_PKEY_free);
  if (EVP_PKEY_id(k) != EVP_PKEY_ED25519) fail("E863", "'" + path + "' is not an Ed25519 key");
  return key;
}

std::string key_id(EVP_PKEY* k) {
  unsigned char* der = nullptr;
  const int n = i2d_PUBKEY(k, &der);
  if (n <= 0) fail("E863", "cannot encode the public key");
  std::string id = sha256_hex(std::string_view(reinterpret_cast<const char*>(der), static_cast<size_t>(n)));
  OPENSSL_free(der);
  return id;
}

std::string to_hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {digits[p[i] >> 4], digits[p[i] & 15]};
  return s;
}

bool from_hex(const std::string& s, std::vector<unsigned char>& out) {
  if (s.size() % 2) return false;
  auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = nibble(s[i]), lo = nibble(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<unsigned char>(hi * 16 + lo));
  }
  return true;
}

}  // namespace

Ed25519Signature ed25519_sign(const std::string& private_key_pem, std::string_view message) {
  Key key = read_key(private_key_pem, true);
  Ctx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char sig[64];
  size_t len = sizeof sig;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig, &len, reinterpret_cast<const unsigned char*>(message.data()), message.size()) != 1)
    fail("E863", "cannot sign with '" + private_key_pem + "'");
  return {to_hex(sig, len), key_id(key.get())};
}

bool ed25519_verify(const std::string& public_key_pem, std::string_view message, const std::string& value_hex,
                    std::string* id) {
  Key key = read_key(public_key_pem, false);
  if (id) *id = key_id(key.get());
  std::vector<unsigned char> sig;
  if (!from_hex(value_hex, sig) || sig.size() != 64) return false;
  Ctx ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) == 1 &&
         EVP_DigestVerify(ctx.get(), sig.data(), sig.size(), reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

}  // namespace tessera
