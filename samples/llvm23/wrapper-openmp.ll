; ModuleID = 'w.bc'
source_filename = "offload.wrapper.module"
target triple = "x86_64-pc-linux-gnu"

%struct.__tgt_offload_entry = type { i64, i16, i16, i32, ptr, ptr, i64, i64, ptr }
%__tgt_device_image = type { ptr, ptr, ptr, ptr }
%__tgt_bin_desc = type { i32, ptr, ptr, ptr }

@__start_llvm_offload_entries = external hidden constant [0 x %struct.__tgt_offload_entry]
@__stop_llvm_offload_entries = external hidden constant [0 x %struct.__tgt_offload_entry]
@__dummy.llvm_offload_entries = internal constant [0 x %struct.__tgt_offload_entry] zeroinitializer, section "llvm_offload_entries", align 8
@llvm.compiler.used = appending global [1 x ptr] [ptr @__dummy.llvm_offload_entries], section "llvm.metadata"
@.omp_offloading.device_image = internal unnamed_addr constant [13 x i8] c"device image\0A", section ".llvm.offloading", align 8
@.omp_offloading.device_images = internal unnamed_addr constant [1 x %__tgt_device_image] [%__tgt_device_image { ptr @.omp_offloading.device_image, ptr getelementptr ([13 x i8], ptr @.omp_offloading.device_image, i64 0, i64 13), ptr @__start_llvm_offload_entries, ptr @__stop_llvm_offload_entries }]
@.omp_offloading.descriptor = internal constant %__tgt_bin_desc { i32 1, ptr @.omp_offloading.device_images, ptr @__start_llvm_offload_entries, ptr @__stop_llvm_offload_entries }
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 101, ptr @.omp_offloading.descriptor_reg, ptr null }]

define internal void @.omp_offloading.descriptor_reg() section ".text.startup" {
entry:
  call void @__tgt_register_lib(ptr @.omp_offloading.descriptor)
  %0 = call i32 @atexit(ptr @.omp_offloading.descriptor_unreg)
  ret void
}

declare void @__tgt_register_lib(ptr)

declare i32 @atexit(ptr)

define internal void @.omp_offloading.descriptor_unreg() section ".text.startup" {
entry:
  call void @__tgt_unregister_lib(ptr @.omp_offloading.descriptor)
  ret void
}

declare void @__tgt_unregister_lib(ptr)
