# tj_proto_library(name PROTOS a.proto b.proto ...): generates message and gRPC code for protos under
# proto/ and wraps it in a static library. Generated code is compiled without -Werror.
function(tj_proto_library name)
  cmake_parse_arguments(ARG "" "" "PROTOS" ${ARGN})
  set(proto_root ${PROJECT_SOURCE_DIR}/proto)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/gen)
  file(MAKE_DIRECTORY ${out_dir})
  find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
  set(srcs)
  foreach(proto ${ARG_PROTOS})
    get_filename_component(abs ${proto} ABSOLUTE)
    file(RELATIVE_PATH rel ${proto_root} ${abs})
    string(REGEX REPLACE "\\.proto$" "" base ${rel})
    set(gen ${out_dir}/${base}.pb.cc ${out_dir}/${base}.pb.h ${out_dir}/${base}.grpc.pb.cc
            ${out_dir}/${base}.grpc.pb.h)
    add_custom_command(
      OUTPUT ${gen}
      COMMAND protobuf::protoc --proto_path=${proto_root} --cpp_out=${out_dir} --grpc_out=${out_dir}
              --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN} ${abs}
      DEPENDS ${abs} protobuf::protoc
      COMMENT "protoc ${rel}")
    list(APPEND srcs ${out_dir}/${base}.pb.cc ${out_dir}/${base}.grpc.pb.cc)
  endforeach()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} SYSTEM PUBLIC ${out_dir})
  target_link_libraries(${name} PUBLIC protobuf::libprotobuf gRPC::grpc++)
endfunction()
