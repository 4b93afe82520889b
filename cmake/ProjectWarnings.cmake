# Warnings as errors on the project's own code only; generated and third-party code is exempt.
function(tj_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror -Wno-unused-parameter)
endfunction()
