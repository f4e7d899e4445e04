// Ed25519 signatures (OpenSSL libcrypto) with keys the user holds, as PEM
// files: `openssl genpkey -algorithm ed25519 -out key.pem` and
// `openssl pkey -in key.pem -pubout -out pub.pem`. What a signature adds to an
// unkeyed digest: only the holder of the private key can make one.
// Errors: E863 a key file that cannot be read or is not an Ed25519 key.
#pragma once
#include <string>
#include <string_view>

namespace tessera {

struct Ed25519Signature {
  std::string value_hex;  // 64 bytes
  std::string key_id;     // sha256 of the public key (DER SubjectPublicKeyInfo), hex
};

Ed25519Signature ed25519_sign(const std::string& private_key_pem, std::string_view message);

// Whether `value_hex` is a signature of `message` by the key in `public_key_pem`
// (a malformed value is simply not one); `key_id` receives that key's id.
bool ed25519_verify(const std::string& public_key_pem, std::string_view message, const std::string& value_hex,
                    std::string* key_id = nullptr);

}  // namespace tessera
