; ModuleID = 'w.bc'
source_filename = "offload.wrapper.module"
target triple = "x86_64-pc-linux-gnu"

@.sycl_offloading.binary = internal unnamed_addr constant [13 x i8] c"device image\0A", section ".llvm.offloading"
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 1, ptr @sycl.descriptor_reg, ptr null }]
@llvm.global_dtors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 1, ptr @sycl.descriptor_unreg, ptr null }]

define internal void @sycl.descriptor_reg() section ".text.startup" {
entry:
  call void @__sycl_register_lib(ptr @.sycl_offloading.binary, i64 13)
  ret void
}

declare void @__sycl_register_lib(ptr, i64)

define internal void @sycl.descriptor_unreg() section ".text.startup" {
entry:
  call void @__sycl_unregister_lib(ptr @.sycl_offloading.binary, i64 13)
  ret void
}

declare void @__sycl_unregister_lib(ptr, i64)
