# The CSI node plugin (src/csi): an executable of its own, tensorfs-csi, that `tensorfs csi` runs, so that no other
# tensorfs process loads gRPC, protobuf and abseil at start-up (the tests start tensorfs thousands of times, also
# under the sanitizers: docs/ci.md). Its stubs are generated at build time from the CSI spec's own csi.proto
# (third_party/csi) with Debian's protoc and grpc_cpp_plugin.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)

set(CSI_PROTO_DIR ${PROJECT_SOURCE_DIR}/third_party/csi)
set(CSI_STUBS_DIR ${CMAKE_CURRENT_BINARY_DIR}/csi_stubs)
set(CSI_STUBS ${CSI_STUBS_DIR}/csi.pb.cc ${CSI_STUBS_DIR}/csi.pb.h ${CSI_STUBS_DIR}/csi.grpc.pb.cc
  ${CSI_STUBS_DIR}/csi.grpc.pb.h)
add_custom_command(OUTPUT ${CSI_STUBS}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CSI_STUBS_DIR}
  COMMAND protobuf::protoc -I ${CSI_PROTO_DIR} --cpp_out=${CSI_STUBS_DIR} --grpc_out=${CSI_STUBS_DIR}
    --plugin=protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin> ${CSI_PROTO_DIR}/csi.proto
  DEPENDS ${CSI_PROTO_DIR}/csi.proto VERBATIM)
# Generated code is compiled without our warnings; src/csi keeps them (and -Werror).
add_library(csi_stubs STATIC ${CSI_STUBS_DIR}/csi.pb.cc ${CSI_STUBS_DIR}/csi.grpc.pb.cc)
target_compile_options(csi_stubs PRIVATE -w)
# Nor with the sanitizers: they check our code, not protoc's, and instrumenting it at -O0 cost CI minutes (docs/ci.md).
if(TENSORFS_SANITIZE)
  target_compile_options(csi_stubs PRIVATE -fno-sanitize=all)
endif()
# Its two large generated files compile one per core, not as one batch on one core (66 s with the other core idle in
# the packaged build: docs/ci.md).
set_target_properties(csi_stubs PROPERTIES UNITY_BUILD OFF)
target_include_directories(csi_stubs SYSTEM PUBLIC ${CSI_STUBS_DIR})
target_link_libraries(csi_stubs PUBLIC gRPC::grpc++ protobuf::libprotobuf)

file(GLOB TENSORFS_CSI_SOURCES CONFIGURE_DEPENDS src/csi/*.cpp)
list(REMOVE_ITEM TENSORFS_CSI_SOURCES ${PROJECT_SOURCE_DIR}/src/csi/holder_main.cpp)
add_executable(tensorfs-csi ${TENSORFS_CSI_SOURCES})
# The engine's settings check a volume's options at publish as a mount will take them (volume_request.cpp).
tensorfs_in_layer(tensorfs-csi csi)
target_link_libraries(tensorfs-csi PRIVATE csi_stubs)

# `tensorfs csi` finds the plugin beside itself (a build folder), else where it is installed, relative to itself.
include(GNUInstallDirs)
file(RELATIVE_PATH TENSORFS_PLUGIN_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBEXECDIR}/tensorfs)
set_source_files_properties(src/cli/csi_command.cpp PROPERTIES
  COMPILE_DEFINITIONS TENSORFS_PLUGIN_FROM_BIN="${TENSORFS_PLUGIN_FROM_BIN}")

# The mount holder (src/csi/holder_main.cpp): the parent of the volumes' daemons in a DaemonSet of its own, so that
# they outlive the plugin's container (docs/kubernetes.md). Kept small: no gRPC, no FUSE, no tensorfs library.
add_executable(tensorfs-holder src/csi/holder_main.cpp src/csi/holder_protocol.cpp)
target_link_libraries(tensorfs-holder PRIVATE nlohmann_json::nlohmann_json)
