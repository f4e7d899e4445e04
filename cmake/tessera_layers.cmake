# One static library per folder under src/, with declared dependencies, so that
# the layering in docs/architecture.md is enforced by the build.
#
#   tessera_layer(<name> [DIR <folder under src/>] [RECURSE] [DEPS <layer>...]
#                 [EXTERNAL <target>...] [SOURCES <file>...])
#
# defines the target tessera_<name> from src/<DIR>/*.cpp (DIR defaults to
# <name>; RECURSE takes subfolders too). Its headers are staged as symlinks
# under <build>/layers/<name>/ and that directory is its only public include
# path, so a source sees the headers of its own layer and of the layers it
# depends on (transitively), and nothing else: an include across an
# undeclared edge fails to compile. A DEPS entry must name a layer declared
# earlier, which keeps the graph acyclic.
set(TESSERA_LAYER_STAGE ${CMAKE_BINARY_DIR}/layers)

function(tessera_layer name)
  cmake_parse_arguments(L "RECURSE" "DIR" "DEPS;EXTERNAL;SOURCES" ${ARGN})
  if(NOT L_DIR)
    set(L_DIR ${name})
  endif()
  set(dir ${CMAKE_SOURCE_DIR}/src/${L_DIR})
  if(L_RECURSE)
    file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${dir}/*.cpp)
    file(GLOB_RECURSE headers CONFIGURE_DEPENDS ${dir}/*.hpp ${dir}/*.h)
  else()
    file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cpp)
    file(GLOB headers CONFIGURE_DEPENDS ${dir}/*.hpp ${dir}/*.h)
  endif()

  set(deps)
  foreach(dep IN LISTS L_DEPS)
    if(NOT TARGET tessera_${dep})
      message(FATAL_ERROR "layer ${name} depends on '${dep}', which is not a layer declared before it "
                          "(declare layers bottom-up; docs/architecture.md)")
    endif()
    list(APPEND deps tessera_${dep})
  endforeach()

  # Stage the headers at their usual paths ("ir/ir.hpp") under a directory of
  # this layer's own; restaged on every configure (CONFIGURE_DEPENDS reruns
  # it when a header is added or removed).
  set(stage ${TESSERA_LAYER_STAGE}/${name})
  file(REMOVE_RECURSE ${stage})
  file(MAKE_DIRECTORY ${stage})
  foreach(header IN LISTS headers)
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR}/src ${header})
    get_filename_component(rel_dir ${rel} DIRECTORY)
    file(MAKE_DIRECTORY ${stage}/${rel_dir})
    file(CREATE_LINK ${header} ${stage}/${rel} SYMBOLIC)
  endforeach()

  add_library(tessera_${name} STATIC ${sources} ${L_SOURCES})
  set_target_properties(tessera_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(tessera_${name} PUBLIC ${stage})
  target_link_libraries(tessera_${name} PUBLIC ${deps} ${L_EXTERNAL})
  set_property(GLOBAL APPEND PROPERTY TESSERA_LAYERS tessera_${name})
  set_property(GLOBAL APPEND PROPERTY TESSERA_LAYER_SOURCES ${sources})
endfunction()

# The umbrella target tessera_core links every layer (for tools and tests),
# after checking that every source under src/ belongs to a layer: a new folder
# must be declared, never silently left out.
function(tessera_core_umbrella)
  get_property(layers GLOBAL PROPERTY TESSERA_LAYERS)
  get_property(owned GLOBAL PROPERTY TESSERA_LAYER_SOURCES)
  file(GLOB_RECURSE all CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.cpp)
  foreach(source IN LISTS all)
    if(NOT source IN_LIST owned)
      message(FATAL_ERROR "${source} belongs to no layer: declare its folder with tessera_layer() in CMakeLists.txt")
    endif()
  endforeach()
  add_library(tessera_core INTERFACE)
  target_link_libraries(tessera_core INTERFACE ${layers})
endfunction()
