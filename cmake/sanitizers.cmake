# TESSERA_SANITIZE=address,undefined builds everything with those sanitizers,
# stopping at the first undefined-behaviour report (`make test-asan`). The
# kernels compiled at run time are sanitized too when TESSERA_CXX points at
# scripts/sanitized_cxx.sh (the Makefile's test-asan does).
set(TESSERA_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined (empty: none)")
if(TESSERA_SANITIZE)
  add_compile_options(-fsanitize=${TESSERA_SANITIZE} -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  # GCC 12's flow analysis under the sanitizers' instrumentation reports
  # maybe-uninitialized inside libstdc++ (std::regex, std::function): a
  # warning there, not a build failure.
  add_compile_options(-Wno-error=maybe-uninitialized)
  add_link_options(-fsanitize=${TESSERA_SANITIZE})
endif()
