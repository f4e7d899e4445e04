#pragma once
#include <string>
#include <string_view>

namespace tessera {
// Lower-case hex SHA-256 (OpenSSL libcrypto).
std::string sha256_hex(std::string_view data);
std::string sha256_file_hex(const std::string& path);  // "" if unreadable
}  // namespace tessera
