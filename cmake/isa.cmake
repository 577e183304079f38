# Per-ISA translation units get their own flags; the rest of the library stays baseline (x86-64,
# or armv8-a with Advanced SIMD) so one binary runs anywhere and picks kernels at run time (see
# src/lowbit/target).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(LOWBIT_ARCH aarch64)
  set(LOWBIT_ISAS i8mm neondot neon)  # longest match first: `*_neondot` is not `*_neon`
else()
  set(LOWBIT_ARCH x86_64)
  set(LOWBIT_ISAS avx512vnni avx512popcnt avx512vbmi avx512 avxvnni avx2)
endif()

set(LOWBIT_ISA_FLAGS_avx2 -mavx2 -mfma -mf16c)
set(LOWBIT_ISA_FLAGS_avx512 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma)
set(LOWBIT_ISA_FLAGS_avx512popcnt -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vpopcntdq -mpopcnt)
set(LOWBIT_ISA_FLAGS_avx512vbmi -mavx512f -mavx512bw -mavx512vl -mavx512vbmi)
set(LOWBIT_ISA_FLAGS_avx512vnni -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma)
set(LOWBIT_ISA_FLAGS_avxvnni -mavx2 -mfma -mavxvnni)
set(LOWBIT_ISA_FLAGS_neon -march=armv8-a)
set(LOWBIT_ISA_FLAGS_neondot -march=armv8.2-a+dotprod)
set(LOWBIT_ISA_FLAGS_i8mm -march=armv8.6-a+i8mm)

# lowbit_isa_sources(<target> <isa> files...): add files compiled with that ISA's flags.
function(lowbit_isa_sources tgt isa)
  target_sources(${tgt} PRIVATE ${ARGN})
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${LOWBIT_ISA_FLAGS_${isa}}")
endfunction()

# The ISA a source's name asks for ("" for baseline code), of any architecture.
function(lowbit_source_isa src out)
  get_filename_component(stem ${src} NAME_WE)
  set(isa "")
  foreach(candidate avx512vnni avx512popcnt avx512vbmi avx512 avxvnni avx2 i8mm neondot neon)
    if(stem STREQUAL candidate OR stem MATCHES "_${candidate}$")
      set(isa ${candidate})
      break()
    endif()
  endforeach()
  set(${out} ${isa} PARENT_SCOPE)
endfunction()
