; ModuleID = 'w.bc'
source_filename = "offload.wrapper.module"
target triple = "x86_64-pc-linux-gnu"

%struct.__tgt_offload_entry = type { i64, i16, i16, i32, ptr, ptr, i64, i64, ptr }
%fatbin_wrapper = type { i32, i32, ptr, ptr }

@__start_llvm_offload_entries = external hidden constant [0 x %struct.__tgt_offload_entry]
@__stop_llvm_offload_entries = external hidden constant [0 x %struct.__tgt_offload_entry]
@__dummy.llvm_offload_entries = internal constant [0 x %struct.__tgt_offload_entry] zeroinitializer, section "llvm_offload_entries", align 8
@llvm.compiler.used = appending global [1 x ptr] [ptr @__dummy.llvm_offload_entries], section "llvm.metadata"
@.fatbin_image = internal constant [13 x i8] c"device image\0A", section ".nv_fatbin"
@.fatbin_wrapper = internal constant %fatbin_wrapper { i32 1180844977, i32 1, ptr @.fatbin_image, ptr null }, section ".nvFatBinSegment", no_sanitize_address, no_sanitize_hwaddress, align 8
@.cuda.binary_handle = internal global ptr null
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 101, ptr @.cuda.fatbin_reg, ptr null }]

define internal void @.cuda.fatbin_reg() section ".text.startup" {
entry:
  %0 = call ptr @__cudaRegisterFatBinary(ptr @.fatbin_wrapper)
  store ptr %0, ptr @.cuda.binary_handle, align 8
  call void @.cuda.globals_reg(ptr %0)
  call void @__cudaRegisterFatBinaryEnd(ptr %0)
  %1 = call i32 @atexit(ptr @.cuda.fatbin_unreg)
  ret void
}

define internal void @.cuda.fatbin_unreg() section ".text.startup" {
entry:
  %0 = load ptr, ptr @.cuda.binary_handle, align 8
  call void @__cudaUnregisterFatBinary(ptr %0)
  ret void
}

declare ptr @__cudaRegisterFatBinary(ptr)

declare void @__cudaRegisterFatBinaryEnd(ptr)

declare void @__cudaUnregisterFatBinary(ptr)

declare i32 @atexit(ptr)

declare i32 @__cudaRegisterFunction(ptr, ptr, ptr, ptr, i32, ptr, ptr, ptr, ptr, ptr)

declare void @__cudaRegisterVar(ptr, ptr, ptr, ptr, i32, i64, i32, i32)

declare void @__cudaRegisterManagedVar(ptr, ptr, ptr, ptr, i64, i32)

declare void @__cudaRegisterSurface(ptr, ptr, ptr, ptr, i32, i32)

declare void @__cudaRegisterTexture(ptr, ptr, ptr, ptr, i32, i32, i32)

define internal void @.cuda.globals_reg(ptr %0) section ".text.startup" {
entry:
  %1 = icmp ne ptr @__start_llvm_offload_entries, @__stop_llvm_offload_entries
  br i1 %1, label %while.entry, label %while.end

while.entry:                                      ; preds = %if.end, %entry
  %entry1 = phi ptr [ @__start_llvm_offload_entries, %entry ], [ %16, %if.end ]
  %2 = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i32 0, i32 4
  %addr = load ptr, ptr %2, align 8
  %3 = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i32 0, i32 8
  %aux_addr = load ptr, ptr %3, align 8
  %4 = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i32 0, i32 2
  %kind = load i16, ptr %4, align 2
  %5 = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i32 0, i32 5
  %name = load ptr, ptr %5, align 8
  %6 = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i32 0, i32 6
  %size = load i64, ptr %6, align 4
  %7 = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i32 0, i32 3
  %flags = load i32, ptr %7, align 4
  %8 = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i32 0, i32 7
  %data = load i64, ptr %8, align 4
  %9 = trunc i64 %data to i32
  %type = and i32 %flags, 7
  %10 = and i32 %flags, 8
  %extern = lshr i32 %10, 3
  %11 = and i32 %flags, 16
  %constant = lshr i32 %11, 4
  %12 = and i32 %flags, 32
  %normalized = lshr i32 %12, 5
  %13 = icmp eq i16 %kind, 2
  br i1 %13, label %if.kind, label %if.end

if.kind:                                          ; preds = %while.entry
  %14 = icmp eq i64 %size, 0
  br i1 %14, label %if.then, label %if.else

if.then:                                          ; preds = %if.kind
  %15 = call i32 @__cudaRegisterFunction(ptr %0, ptr %addr, ptr %name, ptr %name, i32 -1, ptr null, ptr null, ptr null, ptr null, ptr null)
  br label %if.end

if.else:                                          ; preds = %if.kind
  switch i32 %type, label %if.end [
    i32 0, label %sw.global
    i32 1, label %sw.managed
    i32 2, label %sw.surface
    i32 3, label %sw.texture
  ]

sw.global:                                        ; preds = %if.else
  call void @__cudaRegisterVar(ptr %0, ptr %addr, ptr %name, ptr %name, i32 %extern, i64 %size, i32 %constant, i32 0)
  br label %if.end

sw.managed:                                       ; preds = %if.else
  call void @__cudaRegisterManagedVar(ptr %0, ptr %aux_addr, ptr %addr, ptr %name, i64 %size, i32 %9)
  br label %if.end

sw.surface:                                       ; preds = %if.else
  br label %if.end

sw.texture:                                       ; preds = %if.else
  br label %if.end

if.end:                                           ; preds = %sw.texture, %sw.surface, %sw.managed, %sw.global, %if.else, %if.then, %while.entry
  %16 = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i64 1
  %17 = icmp eq ptr %16, @__stop_llvm_offload_entries
  br i1 %17, label %while.end, label %while.entry

while.end:                                        ; preds = %if.end, %entry
  ret void
}
