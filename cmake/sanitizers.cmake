# TESSERA_SANITIZE=address,undefined builds everything with those sanitizers,
# stopping at the first undefined-behaviour report (`make test-asan`). The
# kernels compiled at run time are sanitized too when TESSERA_CXX points at
# scripts/sanitized_cxx.sh (the Makefile's test-asan does).
set(TESSERA_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined (empty: none)")
if(TESSERA_SANITIZE)
  add_compile_options(-fsanitize=${TESSERA_SANITIZE} -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TESSERA_SANITIZE})
endif()
