//! The wrapper modules of both personalities, built as [`Module`]s: clang-offload-wrapper's
//! OpenMP module, and LLVM 22's `llvm-offload-wrapper` modules for OpenMP, CUDA and HIP.

use crate::codegen::layout::name;
use crate::llvm::ir::module::{
    bytes_type, global, int, local, null, Block, Body, Const, Function, Global, Inst, Linkage,
    Module, NamedStruct, Op, Predicate, Type, Value,
};
use crate::ops::wrapper::OffloadKind;
use crate::target::processor::LlvmVersion;

/// The section of the registration functions.
const STARTUP: &str = ".text.startup";

/// An internal constant `@name = internal constant init`.
pub(super) fn internal_constant(name: &str, init: Const) -> Global {
    Global {
        name: name.to_string(),
        ty: init.ty(),
        linkage: Linkage::Internal,
        hidden: false,
        unnamed_addr: false,
        constant: true,
        init: Some(init),
        section: None,
        align: None,
        no_sanitize: false,
    }
}

/// A hidden external constant of type `ty`: a section's start or stop symbol.
fn section_bound(name: &str, ty: Type) -> Global {
    Global {
        name: name.to_string(),
        ty,
        linkage: Linkage::External,
        hidden: true,
        unnamed_addr: false,
        constant: true,
        init: None,
        section: None,
        align: None,
        no_sanitize: false,
    }
}

/// `@name = appending global [1 x { i32, ptr, ptr }] [{ i32 priority, ptr @function, ptr null }]`.
pub(super) fn structors(name: &str, priority: i64, function: &str) -> Global {
    let entry = Type::Struct(vec![int(32), Type::Ptr, Type::Ptr]);
    Global {
        linkage: Linkage::Appending,
        constant: false,
        ..internal_constant(
            name,
            Const::Array(
                entry.clone(),
                vec![Const::Struct(
                    entry,
                    vec![Const::Int(32, priority), global(function), null()],
                )],
            ),
        )
    }
}

/// An instruction without a result.
pub(super) fn inst(op: Op) -> Inst {
    Inst { name: None, op }
}

/// An instruction whose result is `%name`.
pub(super) fn named(name: &str, op: Op) -> Inst {
    Inst {
        name: Some(name.to_string()),
        op,
    }
}

pub(super) fn call(callee: &str, args: Vec<Value>) -> Op {
    Op::Call {
        callee: callee.to_string(),
        args,
    }
}

pub(super) fn block(name: &str, insts: Vec<Inst>) -> Block {
    Block {
        name: name.to_string(),
        insts,
    }
}

pub(super) fn br(to: &str) -> Inst {
    inst(Op::Br(to.to_string()))
}

pub(super) fn ret() -> Inst {
    inst(Op::RetVoid)
}

/// An internal function in `.text.startup` with parameters `params` (type, name).
pub(super) fn startup(name: &str, params: &[(Type, &str)], blocks: Vec<Block>) -> Function {
    startup_in(STARTUP, name, params, blocks)
}

/// An internal function in `section` with parameters `params` (type, name).
pub(super) fn startup_in(
    section: &str,
    name: &str,
    params: &[(Type, &str)],
    blocks: Vec<Block>,
) -> Function {
    Function {
        name: name.to_string(),
        ret: Type::Void,
        params: params.iter().map(|(ty, _)| ty.clone()).collect(),
        linkage: Linkage::Internal,
        section: Some(section.to_string()),
        body: Some(Body {
            params: params.iter().map(|(_, name)| name.to_string()).collect(),
            blocks,
        }),
    }
}

pub(super) fn declare(name: &str, ret: Type, params: usize) -> Function {
    Function::declare(name, ret, vec![Type::Ptr; params])
}

/// The image constant `index` of `len` bytes.
pub(super) fn image(index: usize, len: u64) -> Const {
    Const::Image { index, len }
}

/// The start of clang-offload-wrapper's entries section.
const OMP_START: &str = "__start_omp_offloading_entries";
/// The end of clang-offload-wrapper's entries section.
const OMP_STOP: &str = "__stop_omp_offloading_entries";

/// The OpenMP wrapper module of clang-offload-wrapper (ROCm's LLVM 14), for `triple`: the
/// images of lengths `lens` and their target IDs `arches`, a `__tgt_bin_desc` registered
/// with `__tgt_register_lib`, and the image information given to
/// `__tgt_register_image_info` when the runtime has it.
pub fn clang_offload_wrapper(triple: &str, lens: &[u64], arches: &[&str]) -> Module {
    let k = lens.len();
    let mut globals = omp14_entries_bounds();
    globals.extend(omp14_images(lens));
    globals.extend(omp14_arch_names(arches));
    globals.push(omp14_device_images(lens));
    globals.push(omp14_descriptor(k));
    globals.extend(omp14_image_infos(k));
    globals.push(structors(
        "llvm.global_ctors",
        1,
        ".omp_offloading.descriptor_reg",
    ));
    globals.push(structors(
        "llvm.global_dtors",
        1,
        ".omp_offloading.descriptor_unreg",
    ));
    Module {
        id: "offload.wrapper.object".into(),
        triple: triple.to_string(),
        structs: omp14_structs(),
        globals,
        functions: omp14_functions(k),
    }
}

/// The named structures of clang-offload-wrapper's module, in the order of their
/// [`Type::Named`] indices: entry, device image, binary descriptor, image information.
fn omp14_structs() -> Vec<NamedStruct> {
    vec![
        NamedStruct {
            name: "__tgt_offload_entry".into(),
            fields: vec![Type::Ptr, Type::Ptr, int(64), int(32), int(32)],
        },
        NamedStruct {
            name: "__tgt_device_image".into(),
            fields: vec![Type::Ptr; 4],
        },
        NamedStruct {
            name: "__tgt_bin_desc".into(),
            fields: vec![int(32), Type::Ptr, Type::Ptr, Type::Ptr],
        },
        NamedStruct {
            name: "__tgt_image_info".into(),
            fields: vec![int(32), int(32), int(32), Type::Ptr, Type::Ptr],
        },
    ]
}

/// The `__start_`/`__stop_` symbols of `omp_offloading_entries`, and the dummy entry that
/// keeps the section.
fn omp14_entries_bounds() -> Vec<Global> {
    let offload_entry = Type::Named(0);
    vec![
        section_bound(OMP_START, offload_entry.clone()),
        section_bound(OMP_STOP, offload_entry.clone()),
        Global {
            hidden: true,
            linkage: Linkage::External,
            section: Some("omp_offloading_entries".into()),
            ..internal_constant(
                "__dummy.omp_offloading.entry",
                Const::Null(Type::Array(0, Box::new(offload_entry))),
            )
        },
    ]
}

/// The images of lengths `lens`.
fn omp14_images(lens: &[u64]) -> Vec<Global> {
    lens.iter()
        .enumerate()
        .map(|(i, &len)| Global {
            unnamed_addr: true,
            align: Some(8),
            ..internal_constant(&name(".omp_offloading.device_image", i), image(i, len))
        })
        .collect()
}

/// The images' target IDs `arches`, NUL-terminated, in `.offload_arch_list`.
fn omp14_arch_names(arches: &[&str]) -> Vec<Global> {
    arches
        .iter()
        .enumerate()
        .map(|(i, arch)| {
            let mut bytes = arch.as_bytes().to_vec();
            bytes.push(0);
            Global {
                unnamed_addr: true,
                section: Some(".offload_arch_list".into()),
                ..internal_constant(&name("__offload_arch", i), Const::Bytes(bytes))
            }
        })
        .collect()
}

/// The array of `__tgt_device_image`s: each image's start and end, and the entries' bounds.
fn omp14_device_images(lens: &[u64]) -> Global {
    let device_image = Type::Named(1);
    let records = lens
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let n = name(".omp_offloading.device_image", i);
            let end = Const::Gep {
                inbounds: true,
                source: bytes_type(len),
                base: Box::new(global(&n)),
                indices: vec![Const::Int(64, 1), Const::Int(64, 0)],
            };
            Const::Struct(
                device_image.clone(),
                vec![global(&n), end, global(OMP_START), global(OMP_STOP)],
            )
        })
        .collect();
    Global {
        unnamed_addr: true,
        ..internal_constant(
            ".omp_offloading.device_images",
            Const::Array(device_image, records),
        )
    }
}

/// The `__tgt_bin_desc` of the `k` images.
fn omp14_descriptor(k: usize) -> Global {
    internal_constant(
        ".omp_offloading.descriptor",
        Const::Struct(
            Type::Named(2),
            vec![
                Const::Int(32, k as i64),
                global(".omp_offloading.device_images"),
                global(OMP_START),
                global(OMP_STOP),
            ],
        ),
    )
}

/// The `__tgt_image_info` of each of the `k` images: its index, the count and its target ID.
fn omp14_image_infos(k: usize) -> Vec<Global> {
    (0..k)
        .map(|i| {
            internal_constant(
                &name(".offload_image_info", i),
                Const::Struct(
                    Type::Named(3),
                    vec![
                        Const::Int(32, 1),
                        Const::Int(32, i as i64),
                        Const::Int(32, k as i64),
                        global(&name("__offload_arch", i)),
                        null(),
                    ],
                ),
            )
        })
        .collect()
}

/// The runtime's functions clang-offload-wrapper's module calls, and its registration and
/// unregistration of the descriptor of `k` images.
fn omp14_functions(k: usize) -> Vec<Function> {
    vec![
        Function {
            linkage: Linkage::ExternWeak,
            ..declare("__tgt_register_image_info", Type::Void, 1)
        },
        declare("__tgt_register_lib", Type::Void, 1),
        declare("__tgt_unregister_lib", Type::Void, 1),
        omp14_descriptor_reg(k),
        startup(
            ".omp_offloading.descriptor_unreg",
            &[],
            vec![block(
                "entry",
                vec![
                    inst(call("__tgt_unregister_lib", omp14_descriptor_arg())),
                    ret(),
                ],
            )],
        ),
    ]
}

/// The descriptor, as the argument of the runtime's registration functions.
fn omp14_descriptor_arg() -> Vec<Value> {
    vec![Value::from(global(".omp_offloading.descriptor"))]
}

/// The registration of the descriptor of `k` images: the image information first, when the
/// runtime has `__tgt_register_image_info`, then the descriptor.
fn omp14_descriptor_reg(k: usize) -> Function {
    let mut info: Vec<Inst> = (0..k)
        .map(|i| {
            inst(call(
                "__tgt_register_image_info",
                vec![global(&name(".offload_image_info", i)).into()],
            ))
        })
        .collect();
    info.push(br("register"));
    startup(
        ".omp_offloading.descriptor_reg",
        &[],
        vec![
            block(
                "entry",
                vec![
                    named(
                        "has_info",
                        Op::ICmp {
                            predicate: Predicate::Ne,
                            lhs: global("__tgt_register_image_info").into(),
                            rhs: null().into(),
                        },
                    ),
                    inst(Op::CondBr {
                        cond: local("has_info"),
                        then: "info".into(),
                        otherwise: "register".into(),
                    }),
                ],
            ),
            block("info", info),
            block(
                "register",
                vec![
                    inst(call("__tgt_register_lib", omp14_descriptor_arg())),
                    ret(),
                ],
            ),
        ],
    )
}

/// What a triple's object format changes in `llvm-offload-wrapper`'s module: the names of
/// the entries' bounds and the section of the constructors (Mach-O has its own in LLVM 23),
/// and where the fat binaries go (macOS puts them in its runtime's segment). LLVM 22 treats
/// Mach-O as ELF but for the bounds, which it declares in the `$OA` and `$OZ` sections.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// The start of the entries.
    pub start: &'static str,
    /// Their end.
    pub stop: &'static str,
    /// The section of the entries, for the dummy that keeps it.
    entries: &'static str,
    /// The section of the constructors and of what they call.
    pub startup: &'static str,
    /// Whether a CUDA fat binary and its wrapper go to `__NV_CUDA` sections.
    pub macos_cuda: bool,
    /// Whether a HIP fat binary and its wrapper go to `__HIP` sections (LLVM 23).
    pub macos_hip: bool,
    /// COFF: bounds of the module's own around the entries.
    coff: bool,
    /// LLVM 22 on Mach-O: the bounds declared in the `$OA` and `$OZ` sections.
    grouped: bool,
    /// Mach-O: the bitcode file starts with a wrapper header naming this CPU type.
    pub darwin_cpu: Option<u32>,
}

impl Format {
    /// The format of `triple`, as LLVM's `Triple` reads it: `arch-vendor-os-environment`, the
    /// environment's end naming an object format, else the OS its default one.
    pub fn of(triple: &str, llvm: LlvmVersion) -> Format {
        let mut parts = triple.splitn(4, '-');
        let os = parts.nth(2).unwrap_or("");
        let environment = parts.next().unwrap_or("");
        let darwin = [
            "darwin",
            "macos",
            "ios",
            "tvos",
            "watchos",
            "bridgeos",
            "driverkit",
            "xros",
        ]
        .iter()
        .any(|name| os.starts_with(name));
        let explicit = [
            "elf",
            "coff",
            "xcoff",
            "wasm",
            "goff",
            "spirv",
            "dxcontainer",
        ]
        .iter()
        .any(|format| environment.ends_with(format));
        let macho = environment.ends_with("macho") || (darwin && !explicit);
        let macos = os.starts_with("darwin") || os.starts_with("macos");
        let darwin_cpu = macho.then(|| darwin_cpu_type(triple.split('-').next().unwrap_or("")));
        if macho && llvm >= LlvmVersion::V23 {
            Format {
                start: "\u{1}section$start$__LLVM$offload_entries",
                stop: "\u{1}section$end$__LLVM$offload_entries",
                entries: "__LLVM,offload_entries",
                startup: "__TEXT,__StaticInit",
                macos_cuda: macos,
                macos_hip: macos,
                coff: false,
                grouped: false,
                darwin_cpu,
            }
        } else {
            Format {
                start: "__start_llvm_offload_entries",
                stop: "__stop_llvm_offload_entries",
                entries: "llvm_offload_entries",
                startup: STARTUP,
                macos_cuda: macos,
                macos_hip: false,
                coff: is_coff(triple),
                grouped: macho,
                darwin_cpu,
            }
        }
    }
}

/// The CPU type a Darwin bitcode wrapper header gives for `arch`: x86 and ARM (32-bit), with
/// the 64-bit ABI bit for x86-64 and 64-bit PowerPC; all ones for the others, AArch64 included.
fn darwin_cpu_type(arch: &str) -> u32 {
    const ABI64: u32 = 0x0100_0000;
    const X86: u32 = 7;
    const ARM: u32 = 12;
    const POWERPC: u32 = 18;
    let x86 = arch.len() == 4
        && arch.starts_with('i')
        && arch.ends_with("86")
        && arch
            .as_bytes()
            .get(1)
            .is_some_and(|d| (b'3'..=b'9').contains(d));
    match arch {
        "x86_64" | "amd64" | "x86_64h" => X86 | ABI64,
        "powerpc" | "ppc" | "ppc32" => POWERPC,
        "powerpc64" | "ppc64" => POWERPC | ABI64,
        _ if x86 || arch == "i86pc" => X86,
        _ if arch.starts_with("arm64") || arch.starts_with("aarch64") => u32::MAX,
        _ if arch.starts_with("arm") || arch.starts_with("thumb") || arch.starts_with("xscale") => {
            ARM
        }
        _ => u32::MAX,
    }
}

/// Whether `triple` names a COFF target (Windows, MinGW, Cygwin), whose linker defines no
/// `__start_`/`__stop_` symbols.
fn is_coff(triple: &str) -> bool {
    ["-windows", "-mingw", "-cygwin"]
        .iter()
        .any(|os| triple.contains(os))
}

/// The bounds of `llvm_offload_entries` (of type `entries`): on ELF the linker's
/// `__start_`/`__stop_` symbols, with a dummy that keeps the section; on COFF, as LLVM, bounds
/// of their own in `$OA` and `$OZ`, which the linker sorts around the entries' `$OE`.
pub(super) fn entries_bounds(format: &Format, entries: Type) -> Vec<Global> {
    let (start, stop) = (format.start, format.stop);
    if format.coff {
        let bound = |name: &str, group: &str| Global {
            linkage: Linkage::WeakOdr,
            hidden: true,
            section: Some(format!("llvm_offload_entries${group}")),
            ..internal_constant(name, Const::Null(entries.clone()))
        };
        return vec![bound(start, "OA"), bound(stop, "OZ")];
    }
    if format.grouped {
        let bound = |name: &str, group: &str| Global {
            section: Some(format!("llvm_offload_entries${group}")),
            ..section_bound(name, entries.clone())
        };
        return vec![bound(start, "OA"), bound(stop, "OZ")];
    }
    let dummy = format!("__dummy.{}", format.entries);
    vec![
        section_bound(start, entries.clone()),
        section_bound(stop, entries.clone()),
        Global {
            section: Some(format.entries.into()),
            align: Some(8),
            ..internal_constant(&dummy, Const::Null(entries))
        },
        Global {
            linkage: Linkage::Appending,
            constant: false,
            section: Some("llvm.metadata".into()),
            ..internal_constant(
                "llvm.compiler.used",
                Const::Array(Type::Ptr, vec![global(&dummy)]),
            )
        },
    ]
}

/// What an `llvm-offload-wrapper` module is made for: the runtime, the LLVM release whose
/// module it is, and (OpenMP) whether the program is linked again later.
#[derive(Debug, Clone, Copy)]
pub struct Made {
    /// The runtime the module registers its images with.
    pub kind: OffloadKind,
    /// The release whose module this is (22 or 23).
    pub llvm: LlvmVersion,
    /// `--relocatable` (LLVM 23, OpenMP): the images go to `.llvm.offloading.relocatable`.
    pub relocatable: Relocatable,
}

/// Whether an OpenMP module's program is relocatable, linked again later (`--relocatable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Relocatable {
    /// A final link: the images in `.llvm.offloading`.
    #[default]
    No,
    /// A relocatable link: the images in `.llvm.offloading.relocatable`.
    Yes,
}

impl Made {
    /// The section of the OpenMP images.
    pub(super) fn image_section(&self) -> &'static str {
        match self.relocatable {
            Relocatable::No => ".llvm.offloading",
            Relocatable::Yes => ".llvm.offloading.relocatable",
        }
    }
}
