# Per-ISA translation units get their own flags; the rest of the library stays baseline x86-64
# so one binary runs anywhere and picks kernels at run time (see src/lowbit/target).
set(LOWBIT_ISA_FLAGS_avx2 -mavx2 -mfma -mf16c)
set(LOWBIT_ISA_FLAGS_avx512vnni -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma)
set(LOWBIT_ISA_FLAGS_avxvnni -mavx2 -mfma -mavxvnni)

# lowbit_isa_sources(<target> <isa> files...): add files compiled with that ISA's flags.
function(lowbit_isa_sources tgt isa)
  target_sources(${tgt} PRIVATE ${ARGN})
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${LOWBIT_ISA_FLAGS_${isa}}")
endfunction()
