# The layers of src/ (tests/layers.txt, from the top down), enforced by the build: each layer compiles as a library of
# its own, seeing only its own headers and those of the layers under it, and links only those layers. An include
# that points up, or across to a sibling, does not compile; a call that does fails to link.
#
# A layer's sources get one include folder, BUILD/layers/LAYER, of links: src/X for X this layer or one under it
# (for "remote/http_client.hpp"), and tensorfs/H for each header of include/tensorfs that belongs to such a layer.
# A public header belongs to the layer that holds the source file of the same name (as ../shared/tools/check-layers
# reads it), or to the one TENSORFS_HEADER_LAYERS names.

# Public headers with no source file of their name: the layer each belongs to.
set(TENSORFS_HEADER_LAYERS
  catalog=format         # what the parsers find
  dtype=dequant          # the dtypes and their block sizes, as the kernels know them
  value_view=dequant     # the views the kernels decode into
  source_options=remote  # how a remote source is fetched
)

# The rank of each layer: 0 for the top line of tests/layers.txt.
file(STRINGS ${PROJECT_SOURCE_DIR}/tests/layers.txt TENSORFS_LAYER_LINES)
set(rank 0)
set(TENSORFS_LAYERS)
foreach(line IN LISTS TENSORFS_LAYER_LINES)
  string(REGEX REPLACE "#.*" "" line "${line}")
  string(STRIP "${line}" line)
  if(line STREQUAL "")
    continue()
  endif()
  string(REGEX REPLACE "[ \t]+" ";" names "${line}")
  foreach(name IN LISTS names)
    set(TENSORFS_LAYER_RANK_${name} ${rank})
    list(APPEND TENSORFS_LAYERS ${name})
  endforeach()
  math(EXPR rank "${rank} + 1")
endforeach()

# Whether layer `other` is `layer` or under it (a higher rank): the result in `out`.
function(tensorfs_layer_sees layer other out)
  if(other STREQUAL layer OR TENSORFS_LAYER_RANK_${other} GREATER TENSORFS_LAYER_RANK_${layer})
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# The layer of each public header.
file(GLOB TENSORFS_PUBLIC_HEADERS RELATIVE ${PROJECT_SOURCE_DIR}/include/tensorfs
  ${PROJECT_SOURCE_DIR}/include/tensorfs/*.hpp)
foreach(header IN LISTS TENSORFS_PUBLIC_HEADERS)
  string(REGEX REPLACE "\\.hpp$" "" stem "${header}")
  set(owner "")
  foreach(entry IN LISTS TENSORFS_HEADER_LAYERS)
    if(entry MATCHES "^${stem}=(.+)$")
      set(owner ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(owner STREQUAL "")
    file(GLOB source ${PROJECT_SOURCE_DIR}/src/*/${stem}.cpp)
    if(NOT source)
      message(FATAL_ERROR "include/tensorfs/${header} has no src/LAYER/${stem}.cpp: name its layer in "
        "TENSORFS_HEADER_LAYERS (cmake/layers.cmake)")
    endif()
    list(GET source 0 source)
    get_filename_component(folder ${source} DIRECTORY)
    get_filename_component(owner ${folder} NAME)
  endif()
  set(TENSORFS_HEADER_LAYER_${stem} ${owner})
endforeach()

# BUILD/layers/LAYER, made anew at each configure.
function(tensorfs_layer_include_folder layer out)
  set(folder ${PROJECT_BINARY_DIR}/layers/${layer})
  file(REMOVE_RECURSE ${folder})
  file(MAKE_DIRECTORY ${folder}/tensorfs)
  foreach(other IN LISTS TENSORFS_LAYERS)
    tensorfs_layer_sees(${layer} ${other} sees)
    if(sees)
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${other} ${folder}/${other} SYMBOLIC)
    endif()
  endforeach()
  foreach(header IN LISTS TENSORFS_PUBLIC_HEADERS)
    string(REGEX REPLACE "\\.hpp$" "" stem "${header}")
    tensorfs_layer_sees(${layer} ${TENSORFS_HEADER_LAYER_${stem}} sees)
    if(sees)
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/tensorfs/${header} ${folder}/tensorfs/${header} SYMBOLIC)
    endif()
  endforeach()
  set(${out} ${folder} PARENT_SCOPE)
endfunction()

# What every layer compiles and links with: the libraries, the definitions, the sanitizers' or the fuzzers' flags.
add_library(tensorfs_deps INTERFACE)
target_compile_definitions(tensorfs_deps INTERFACE FUSE_USE_VERSION=312 TENSORFS_VERSION="${PROJECT_VERSION}")
target_link_libraries(tensorfs_deps INTERFACE PkgConfig::FUSE3 PkgConfig::CURL nlohmann_json::nlohmann_json
  Threads::Threads simdjson::simdjson PkgConfig::EXPAT ZLIB::ZLIB PkgConfig::CRYPTO)

# Makes `target` (a layer's library, or a front end's executable or module) see only `layer` and the layers under
# it, and link those layers' libraries.
function(tensorfs_in_layer target layer)
  tensorfs_layer_include_folder(${layer} folder)
  target_include_directories(${target} PRIVATE ${folder})
  foreach(other IN LISTS TENSORFS_LAYERS)
    tensorfs_layer_sees(${layer} ${other} sees)
    if(sees AND NOT other STREQUAL layer AND TARGET tensorfs_layer_${other})
      target_link_libraries(${target} PUBLIC tensorfs_layer_${other})
    endif()
  endforeach()
  target_link_libraries(${target} PUBLIC tensorfs_deps)
endfunction()

# One static library per layer of src/, from the bottom up; csi and python are built by cmake/csi.cmake and
# cmake/python.cmake, and cli's main.cpp is the command's own.
set(TENSORFS_LIBRARY_LAYERS base dequant io format remote sources vfs engine compare fuse cli)
foreach(layer IN LISTS TENSORFS_LIBRARY_LAYERS)
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${layer}/*.cpp)
  list(REMOVE_ITEM sources ${PROJECT_SOURCE_DIR}/src/cli/main.cpp)
  add_library(tensorfs_layer_${layer} STATIC ${sources})
  # Linked into the Python module, a shared object, as well as into the command.
  set_target_properties(tensorfs_layer_${layer} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  tensorfs_in_layer(tensorfs_layer_${layer} ${layer})
endforeach()
# The SIMD variants each name their own target attribute and silence warnings for their whole file: compiled alone.
file(GLOB TENSORFS_SIMD_SOURCES CONFIGURE_DEPENDS src/dequant/*avx*.cpp)
set_source_files_properties(${TENSORFS_SIMD_SOURCES} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

# Every layer, for the tests, the benchmarks and the fuzzers, which may include any header.
add_library(tensorfs_core INTERFACE)
target_include_directories(tensorfs_core INTERFACE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
foreach(layer IN LISTS TENSORFS_LIBRARY_LAYERS)
  target_link_libraries(tensorfs_core INTERFACE tensorfs_layer_${layer})
endforeach()
