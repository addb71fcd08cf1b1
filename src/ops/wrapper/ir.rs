//! The wrapper modules as LLVM IR text (opaque pointers), and as bitcode through `llvm-as`.

use std::path::Path;

use super::{name, OffloadKind};
use crate::error::{Error, Result};
use crate::io::Input;

/// An LLVM IR string constant of `bytes`.
fn ir_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3 + 3);
    out.push_str("c\"");
    for &b in bytes {
        if b.is_ascii_graphic() && b != b'"' && b != b'\\' || b == b' ' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\{b:02X}"));
        }
    }
    out.push('"');
    out
}

/// The wrapper as LLVM IR text (opaque pointers), for `triple`.
pub fn llvm_ir(triple: &str, images: &[Input], arches: &[&str]) -> String {
    let k = images.len();
    let mut ir = String::new();
    ir.push_str(
        "; The wrapper of offload device images: registers them with the offload runtime.\n",
    );
    ir.push_str("; ModuleID = 'offload.wrapper.object'\n");
    ir.push_str(&format!("target triple = \"{triple}\"\n\n"));
    ir.push_str("%__tgt_offload_entry = type { ptr, ptr, i64, i32, i32 }\n");
    ir.push_str("%__tgt_device_image = type { ptr, ptr, ptr, ptr }\n");
    ir.push_str("%__tgt_bin_desc = type { i32, ptr, ptr, ptr }\n");
    ir.push_str("%__tgt_image_info = type { i32, i32, i32, ptr, ptr }\n\n");
    ir.push_str(
        "@__start_omp_offloading_entries = external hidden constant %__tgt_offload_entry\n",
    );
    ir.push_str("@__stop_omp_offloading_entries = external hidden constant %__tgt_offload_entry\n");
    ir.push_str("@__dummy.omp_offloading.entry = hidden constant [0 x %__tgt_offload_entry] zeroinitializer, section \"omp_offloading_entries\"\n");
    for (i, image) in images.iter().enumerate() {
        ir.push_str(&format!(
            "@{} = internal unnamed_addr constant [{} x i8] {}, align 8\n",
            ir_name(&name(".omp_offloading.device_image", i)),
            image.len(),
            ir_bytes(image)
        ));
    }
    for (i, arch) in arches.iter().enumerate() {
        let mut bytes = arch.as_bytes().to_vec();
        bytes.push(0);
        ir.push_str(&format!(
            "@{} = internal unnamed_addr constant [{} x i8] {}, section \".offload_arch_list\"\n",
            ir_name(&name("__offload_arch", i)),
            bytes.len(),
            ir_bytes(&bytes)
        ));
    }
    let entries: Vec<String> = images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            let n = ir_name(&name(".omp_offloading.device_image", i));
            format!(
                "%__tgt_device_image {{ ptr @{n}, ptr getelementptr inbounds ([{len} x i8], ptr @{n}, i64 1, i64 0), ptr @__start_omp_offloading_entries, ptr @__stop_omp_offloading_entries }}",
                len = image.len()
            )
        })
        .collect();
    ir.push_str(&format!(
        "@.omp_offloading.device_images = internal unnamed_addr constant [{k} x %__tgt_device_image] [{}]\n",
        entries.join(", ")
    ));
    ir.push_str(&format!(
        "@.omp_offloading.descriptor = internal constant %__tgt_bin_desc {{ i32 {k}, ptr @.omp_offloading.device_images, ptr @__start_omp_offloading_entries, ptr @__stop_omp_offloading_entries }}\n"
    ));
    for i in 0..k {
        ir.push_str(&format!(
            "@{} = internal constant %__tgt_image_info {{ i32 1, i32 {i}, i32 {k}, ptr @{}, ptr null }}\n",
            ir_name(&name(".offload_image_info", i)),
            ir_name(&name("__offload_arch", i))
        ));
    }
    ir.push_str("@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 1, ptr @.omp_offloading.descriptor_reg, ptr null }]\n");
    ir.push_str("@llvm.global_dtors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 1, ptr @.omp_offloading.descriptor_unreg, ptr null }]\n\n");
    ir.push_str("declare extern_weak void @__tgt_register_image_info(ptr)\n");
    ir.push_str("declare void @__tgt_register_lib(ptr)\n");
    ir.push_str("declare void @__tgt_unregister_lib(ptr)\n\n");
    ir.push_str("define internal void @.omp_offloading.descriptor_reg() section \".text.startup\" {\nentry:\n");
    ir.push_str("  %has_info = icmp ne ptr @__tgt_register_image_info, null\n  br i1 %has_info, label %info, label %register\ninfo:\n");
    for i in 0..k {
        ir.push_str(&format!(
            "  call void @__tgt_register_image_info(ptr @{})\n",
            ir_name(&name(".offload_image_info", i))
        ));
    }
    ir.push_str("  br label %register\nregister:\n  call void @__tgt_register_lib(ptr @.omp_offloading.descriptor)\n  ret void\n}\n\n");
    ir.push_str("define internal void @.omp_offloading.descriptor_unreg() section \".text.startup\" {\nentry:\n  call void @__tgt_unregister_lib(ptr @.omp_offloading.descriptor)\n  ret void\n}\n");
    ir
}

/// A global's name as IR writes it: quoted when it holds characters other than letters,
/// digits, `_`, `.` and `$`.
fn ir_name(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$'))
    {
        name.to_string()
    } else {
        format!("\"{name}\"")
    }
}

/// The wrapper as bitcode: the IR assembled by `llvm-as`.
pub(super) fn bitcode(
    triple: &str,
    images: &[Input],
    arches: &[&str],
    output: &Path,
) -> Result<Vec<u8>> {
    assemble(llvm_ir(triple, images, arches), output)
}

/// `ir` assembled into bitcode by `llvm-as` (the first of `llvm-as-19`, `llvm-as-22`,
/// `llvm-as` on `PATH`); `output` is named when there is none.
pub(super) fn assemble(ir: String, output: &Path) -> Result<Vec<u8>> {
    let tool = ["llvm-as-19", "llvm-as-22", "llvm-as"]
        .into_iter()
        .find_map(crate::ops::tool_path::on_path);
    let Some(tool) = tool else {
        return Err(Error::msg(format!(
            "'{}': writing bitcode needs llvm-as on PATH; write a native object (.o) or LLVM IR (.ll) instead",
            output.display()
        )));
    };
    let mut child = std::process::Command::new(&tool)
        .args(["-", "-o", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Error::io(&tool, e))?;
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(ir.as_bytes())
    });
    let out = child.wait_with_output().map_err(|e| Error::io(&tool, e))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(Error::msg(format!(
            "{} failed: {}",
            tool.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}
/// and the unregistration it hands to `atexit`.
pub fn llvm22_ir(kind: OffloadKind, triple: &str, images: &[Input]) -> String {
    let mut ir = String::from("; ModuleID = 'offload.wrapper.module'\n");
    ir.push_str("source_filename = \"offload.wrapper.module\"\n");
    ir.push_str(&format!("target triple = \"{triple}\"\n\n"));
    ir.push_str(
        "%entry = type { i64, i16, i16, i32, ptr, ptr, i64, i64, ptr }\n\
         @__start_llvm_offload_entries = external hidden constant [0 x %entry]\n\
         @__stop_llvm_offload_entries = external hidden constant [0 x %entry]\n\
         @__dummy.llvm_offload_entries = internal constant [0 x %entry] zeroinitializer, section \"llvm_offload_entries\", align 8\n\
         @llvm.compiler.used = appending global [1 x ptr] [ptr @__dummy.llvm_offload_entries], section \"llvm.metadata\"\n\
         declare i32 @atexit(ptr)\n",
    );
    // The runtime's prefix, the wrapper's magic, the image's and wrapper's sections, and the
    // entries' kind (`llvm_offload_entries` holds entries of every runtime).
    let (p, magic, data, segment, entry_kind) = match kind {
        OffloadKind::OpenMp => {
            openmp22(&mut ir, images);
            return ir;
        }
        OffloadKind::Cuda => ("cuda", 0x466243b1u32, ".nv_fatbin", ".nvFatBinSegment", 2),
        OffloadKind::Hip => ("hip", 0x48495046, ".hip_fatbin", ".hipFatBinSegment", 4),
    };
    let prefix = p;
    // The CUDA module registers no surfaces nor textures (LLVM 22 leaves both cases empty).
    let (surface, texture) = if kind == OffloadKind::Hip {
        (
            format!("  call void @__{p}RegisterSurface(ptr %h, ptr %addr, ptr %name, ptr %name, i32 %data, i32 %ext)\n"),
            format!("  call void @__{p}RegisterTexture(ptr %h, ptr %addr, ptr %name, ptr %name, i32 %data, i32 %norm, i32 %ext)\n"),
        )
    } else {
        (String::new(), String::new())
    };
    let image = &images[0];
    ir.push_str(&format!(
        "@.fatbin_image = internal constant [{} x i8] {}, section \"{data}\"\n\
         @.fatbin_wrapper = internal constant {{ i32, i32, ptr, ptr }} {{ i32 {magic}, i32 1, ptr @.fatbin_image, ptr null }}, section \"{segment}\", align 8\n\
         @.{prefix}.binary_handle = internal global ptr null\n\
         @llvm.global_ctors = appending global [1 x {{ i32, ptr, ptr }}] [{{ i32, ptr, ptr }} {{ i32 101, ptr @.{prefix}.fatbin_reg, ptr null }}]\n\n",
        image.len(),
        ir_bytes(image)
    ));
    let end = if kind == OffloadKind::Cuda {
        "  call void @__cudaRegisterFatBinaryEnd(ptr %h)\n"
    } else {
        ""
    };
    ir.push_str(&format!(
        "declare ptr @__{p}RegisterFatBinary(ptr)\n\
         declare void @__cudaRegisterFatBinaryEnd(ptr)\n\
         declare void @__{p}UnregisterFatBinary(ptr)\n\
         declare i32 @__{p}RegisterFunction(ptr, ptr, ptr, ptr, i32, ptr, ptr, ptr, ptr, ptr)\n\
         declare void @__{p}RegisterVar(ptr, ptr, ptr, ptr, i32, i64, i32, i32)\n\
         declare void @__{p}RegisterManagedVar(ptr, ptr, ptr, ptr, i64, i32)\n\
         declare void @__{p}RegisterSurface(ptr, ptr, ptr, ptr, i32, i32)\n\
         declare void @__{p}RegisterTexture(ptr, ptr, ptr, ptr, i32, i32, i32)\n\n\
         define internal void @.{prefix}.fatbin_reg() section \".text.startup\" {{\n\
         entry:\n\
         \x20 %h = call ptr @__{p}RegisterFatBinary(ptr @.fatbin_wrapper)\n\
         \x20 store ptr %h, ptr @.{prefix}.binary_handle, align 8\n\
         \x20 call void @.{prefix}.globals_reg(ptr %h)\n\
         {end}\
         \x20 %r = call i32 @atexit(ptr @.{prefix}.fatbin_unreg)\n\
         \x20 ret void\n}}\n\n\
         define internal void @.{prefix}.fatbin_unreg() section \".text.startup\" {{\n\
         entry:\n\
         \x20 %h = load ptr, ptr @.{prefix}.binary_handle, align 8\n\
         \x20 call void @__{p}UnregisterFatBinary(ptr %h)\n\
         \x20 ret void\n}}\n\n"
    ));
    // Each entry of the runtime's kind registers a function (size 0), or a variable,
    // managed variable, surface or texture by the low three bits of its flags; bit 3 is
    // `extern`, bit 4 `constant`, bit 5 `normalized`.
    ir.push_str(&format!(
        "define internal void @.{prefix}.globals_reg(ptr %h) section \".text.startup\" {{\n\
         entry:\n\
         \x20 %any = icmp ne ptr @__start_llvm_offload_entries, @__stop_llvm_offload_entries\n\
         \x20 br i1 %any, label %loop, label %done\n\
         loop:\n\
         \x20 %e = phi ptr [ @__start_llvm_offload_entries, %entry ], [ %next, %next_entry ]\n\
         \x20 %kind_at = getelementptr inbounds %entry, ptr %e, i32 0, i32 2\n\
         \x20 %kind = load i16, ptr %kind_at, align 2\n\
         \x20 %flags_at = getelementptr inbounds %entry, ptr %e, i32 0, i32 3\n\
         \x20 %flags = load i32, ptr %flags_at, align 4\n\
         \x20 %addr_at = getelementptr inbounds %entry, ptr %e, i32 0, i32 4\n\
         \x20 %addr = load ptr, ptr %addr_at, align 8\n\
         \x20 %name_at = getelementptr inbounds %entry, ptr %e, i32 0, i32 5\n\
         \x20 %name = load ptr, ptr %name_at, align 8\n\
         \x20 %size_at = getelementptr inbounds %entry, ptr %e, i32 0, i32 6\n\
         \x20 %size = load i64, ptr %size_at, align 4\n\
         \x20 %data_at = getelementptr inbounds %entry, ptr %e, i32 0, i32 7\n\
         \x20 %data64 = load i64, ptr %data_at, align 4\n\
         \x20 %data = trunc i64 %data64 to i32\n\
         \x20 %aux_at = getelementptr inbounds %entry, ptr %e, i32 0, i32 8\n\
         \x20 %aux = load ptr, ptr %aux_at, align 8\n\
         \x20 %type = and i32 %flags, 7\n\
         \x20 %ext_bit = and i32 %flags, 8\n\
         \x20 %ext = lshr i32 %ext_bit, 3\n\
         \x20 %const_bit = and i32 %flags, 16\n\
         \x20 %const = lshr i32 %const_bit, 4\n\
         \x20 %norm_bit = and i32 %flags, 32\n\
         \x20 %norm = lshr i32 %norm_bit, 5\n\
         \x20 %ours = icmp eq i16 %kind, {entry_kind}\n\
         \x20 br i1 %ours, label %which, label %next_entry\n\
         which:\n\
         \x20 %is_function = icmp eq i64 %size, 0\n\
         \x20 br i1 %is_function, label %function, label %global\n\
         function:\n\
         \x20 %f = call i32 @__{p}RegisterFunction(ptr %h, ptr %addr, ptr %name, ptr %name, i32 -1, ptr null, ptr null, ptr null, ptr null, ptr null)\n\
         \x20 br label %next_entry\n\
         global:\n\
         \x20 switch i32 %type, label %next_entry [ i32 0, label %var\n\
         \x20   i32 1, label %managed\n\
         \x20   i32 2, label %surface\n\
         \x20   i32 3, label %texture ]\n\
         var:\n\
         \x20 call void @__{p}RegisterVar(ptr %h, ptr %addr, ptr %name, ptr %name, i32 %ext, i64 %size, i32 %const, i32 0)\n\
         \x20 br label %next_entry\n\
         managed:\n\
         \x20 call void @__{p}RegisterManagedVar(ptr %h, ptr %aux, ptr %addr, ptr %name, i64 %size, i32 %data)\n\
         \x20 br label %next_entry\n\
         surface:\n\
         {surface}\
         \x20 br label %next_entry\n\
         texture:\n\
         {texture}\
         \x20 br label %next_entry\n\
         next_entry:\n\
         \x20 %next = getelementptr inbounds %entry, ptr %e, i64 1\n\
         \x20 %end = icmp eq ptr %next, @__stop_llvm_offload_entries\n\
         \x20 br i1 %end, label %done, label %loop\n\
         done:\n\
         \x20 ret void\n}}\n"
    ));
    ir
}

/// The OpenMP part of [`llvm22_ir`]: the images in `.llvm.offloading`, their
/// `__tgt_device_image`s and the `__tgt_bin_desc`, registered with `__tgt_register_lib`.
fn openmp22(ir: &mut String, images: &[Input]) {
    let k = images.len();
    let mut records = Vec::with_capacity(k);
    for (i, image) in images.iter().enumerate() {
        let n = ir_name(&name(".omp_offloading.device_image", i));
        ir.push_str(&format!(
            "@{n} = internal unnamed_addr constant [{len} x i8] {bytes}, section \".llvm.offloading\", align 8\n",
            len = image.len(),
            bytes = ir_bytes(image)
        ));
        records.push(format!(
            "{{ ptr, ptr, ptr, ptr }} {{ ptr @{n}, ptr getelementptr ([{len} x i8], ptr @{n}, i64 0, i64 {len}), ptr @__start_llvm_offload_entries, ptr @__stop_llvm_offload_entries }}",
            len = image.len()
        ));
    }
    ir.push_str(&format!(
        "@.omp_offloading.device_images = internal unnamed_addr constant [{k} x {{ ptr, ptr, ptr, ptr }}] [{}]\n\
         @.omp_offloading.descriptor = internal constant {{ i32, ptr, ptr, ptr }} {{ i32 {k}, ptr @.omp_offloading.device_images, ptr @__start_llvm_offload_entries, ptr @__stop_llvm_offload_entries }}\n\
         @llvm.global_ctors = appending global [1 x {{ i32, ptr, ptr }}] [{{ i32, ptr, ptr }} {{ i32 101, ptr @.omp_offloading.descriptor_reg, ptr null }}]\n\n\
         declare void @__tgt_register_lib(ptr)\n\
         declare void @__tgt_unregister_lib(ptr)\n\n\
         define internal void @.omp_offloading.descriptor_reg() section \".text.startup\" {{\n\
         entry:\n\
         \x20 call void @__tgt_register_lib(ptr @.omp_offloading.descriptor)\n\
         \x20 %r = call i32 @atexit(ptr @.omp_offloading.descriptor_unreg)\n\
         \x20 ret void\n}}\n\n\
         define internal void @.omp_offloading.descriptor_unreg() section \".text.startup\" {{\n\
         entry:\n\
         \x20 call void @__tgt_unregister_lib(ptr @.omp_offloading.descriptor)\n\
         \x20 ret void\n}}\n",
        records.join(", ")
    ));
}
