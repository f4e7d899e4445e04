# Warnings for our own code, errors by default (TESSERA_WERROR=OFF to keep
# building through a new compiler's new warnings while fixing them).
option(TESSERA_WERROR "Treat compiler warnings in Tessera's own code as errors" ON)
add_compile_options(-Wall -Wextra -Wno-unused-parameter)
if(TESSERA_WERROR)
  add_compile_options(-Werror)
endif()
