# -DTJ_SANITIZE=address builds everything with ASan+UBSan, -DTJ_SANITIZE=thread with TSan.
if(TJ_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  # GCC 12 reports maybe-uninitialized inside <regex> and <functional> once ASan instruments them
  # (a known false positive of the instrumentation), which -Werror made fatal for the benchmarks.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  add_link_options(-fsanitize=address,undefined)
elseif(TJ_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(TJ_SANITIZE)
  message(FATAL_ERROR "TJ_SANITIZE must be 'address' or 'thread', got '${TJ_SANITIZE}'")
endif()
