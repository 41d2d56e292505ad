# Rewrites a CUDA source (IN) into C++ for test_cuda_emulated (OUT): every launch
#   kernel<<<grid, threads, shared, stream>>>(args);
# becomes ss_emu_launch(grid, threads, stream, [&] { kernel(args); }); and a dynamic shared array
# (extern __shared__ T name[];) a static one of SS_EMU_DYNAMIC_SHARED bytes. A launch written
# otherwise (arguments in parentheses, say) is left as it is and fails to compile: the test's
# build then says where.
file(READ "${IN}" src)
string(REGEX REPLACE
  "([A-Za-z_][A-Za-z0-9_]*(<[^<>;]*>)?)[ \t\r\n]*<<<([^,;]+),([^,;]+),([^,;]+),([^;]*)>>>\\(([^();]*)\\);"
  "ss_emu_launch(\\3, \\4, \\6, [&] { \\1(\\7); });" src "${src}")
string(REGEX REPLACE "extern __shared__ ([A-Za-z0-9_]+) ([A-Za-z0-9_]+)\\[\\];"
  "static \\1 \\2[SS_EMU_DYNAMIC_SHARED / sizeof(\\1)];" src "${src}")
file(WRITE "${OUT}.tmp" "// generated from ${IN} by tests/emulate_cuda.cmake\n${src}")
file(RENAME "${OUT}.tmp" "${OUT}")
