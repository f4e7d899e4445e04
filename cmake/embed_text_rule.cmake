# embed_text(<in> <out>): a build rule turning a text file into a C++ raw-string
# literal include (cmake/embed_text.cmake). The device tile libraries are
# embedded into every rendered kernel this way, so a kernel's SHA-256 covers
# every line its compiler sees.
function(embed_text IN OUT)
  add_custom_command(OUTPUT ${OUT}
    COMMAND ${CMAKE_COMMAND} -DIN=${IN} -DOUT=${OUT} -P ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake
    DEPENDS ${IN} ${CMAKE_SOURCE_DIR}/cmake/embed_text.cmake)
endfunction()
