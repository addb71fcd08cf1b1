
# __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-
kernel.o: src/kernel.hip

# __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-

# __CLANG_OFFLOAD_BUNDLE____START__ hipv4-amdgcn-amd-amdhsa--gfx906
kernel-gfx906.o: src/kernel.hip

# __CLANG_OFFLOAD_BUNDLE____END__ hipv4-amdgcn-amd-amdhsa--gfx906

# __CLANG_OFFLOAD_BUNDLE____START__ hipv4-amdgcn-amd-amdhsa--gfx90a
kernel-gfx90a.o: src/kernel.hip

# __CLANG_OFFLOAD_BUNDLE____END__ hipv4-amdgcn-amd-amdhsa--gfx90a
