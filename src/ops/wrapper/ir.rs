//! The wrapper modules of both personalities, built as [`Module`]s: clang-offload-wrapper's
//! OpenMP module, and LLVM 22's `llvm-offload-wrapper` modules for OpenMP, CUDA and HIP.

use crate::codegen::layout::name;
use crate::llvm::ir::module::{
    bytes_type, global, int, int_value, local, null, BinaryOp, Block, Body, Const, Function,
    Global, Inst, Linkage, Module, NamedStruct, Op, Predicate, Type, Value,
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
fn named(name: &str, op: Op) -> Inst {
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

fn br(to: &str) -> Inst {
    inst(Op::Br(to.to_string()))
}

pub(super) fn ret() -> Inst {
    inst(Op::RetVoid)
}

/// An internal function in `.text.startup` with parameters `params` (type, name).
pub(super) fn startup(name: &str, params: &[(Type, &str)], blocks: Vec<Block>) -> Function {
    Function {
        name: name.to_string(),
        ret: Type::Void,
        params: params.iter().map(|(ty, _)| ty.clone()).collect(),
        linkage: Linkage::Internal,
        section: Some(STARTUP.to_string()),
        body: Some(Body {
            params: params.iter().map(|(_, name)| name.to_string()).collect(),
            blocks,
        }),
    }
}

fn declare(name: &str, ret: Type, params: usize) -> Function {
    Function::declare(name, ret, vec![Type::Ptr; params])
}

/// The image constant `index` of `len` bytes.
fn image(index: usize, len: u64) -> Const {
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

/// The start of `llvm_offload_entries`.
const START: &str = "__start_llvm_offload_entries";
/// The end of `llvm_offload_entries`.
const STOP: &str = "__stop_llvm_offload_entries";

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
fn entries_bounds(triple: &str, entries: Type) -> Vec<Global> {
    if is_coff(triple) {
        let bound = |name: &str, group: &str| Global {
            linkage: Linkage::WeakOdr,
            hidden: true,
            section: Some(format!("llvm_offload_entries${group}")),
            ..internal_constant(name, Const::Null(entries.clone()))
        };
        return vec![bound(START, "OA"), bound(STOP, "OZ")];
    }
    vec![
        section_bound(START, entries.clone()),
        section_bound(STOP, entries.clone()),
        Global {
            section: Some("llvm_offload_entries".into()),
            align: Some(8),
            ..internal_constant("__dummy.llvm_offload_entries", Const::Null(entries))
        },
        Global {
            linkage: Linkage::Appending,
            constant: false,
            section: Some("llvm.metadata".into()),
            ..internal_constant(
                "llvm.compiler.used",
                Const::Array(Type::Ptr, vec![global("__dummy.llvm_offload_entries")]),
            )
        },
    ]
}

/// The module of LLVM 22's `llvm-offload-wrapper` registering the images of lengths `lens`
/// (one for CUDA and HIP) with the runtime `kind`, for `triple`: the image, the
/// runtime's registration at startup of it and of the entries of `llvm_offload_entries`,
/// and the unregistration it hands to `atexit`.
pub fn llvm_offload_wrapper(made: &Made, triple: &str, lens: &[u64]) -> Module {
    let entry = Type::Named(0);
    let entries = Type::Array(0, Box::new(entry.clone()));
    let mut module = Module {
        id: "offload.wrapper.module".into(),
        triple: triple.to_string(),
        structs: vec![NamedStruct {
            name: "entry".into(),
            fields: vec![
                int(64),
                int(16),
                int(16),
                int(32),
                Type::Ptr,
                Type::Ptr,
                int(64),
                int(64),
                Type::Ptr,
            ],
        }],
        globals: entries_bounds(triple, entries),
        functions: vec![declare("atexit", int(32), 1)],
    };
    match made.kind {
        OffloadKind::OpenMp => openmp22(&mut module, lens, made.image_section()),
        OffloadKind::Cuda | OffloadKind::Hip => fatbinary22(&mut module, made, lens[0]),
        OffloadKind::Sycl => unreachable!("SYCL's module is sycl::module"),
    }
    module
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
    fn image_section(&self) -> &'static str {
        match self.relocatable {
            Relocatable::No => ".llvm.offloading",
            Relocatable::Yes => ".llvm.offloading.relocatable",
        }
    }
}

/// The OpenMP part of [`llvm_offload_wrapper`]: the images in `.llvm.offloading`, their
/// `__tgt_device_image`s and the `__tgt_bin_desc`, registered with `__tgt_register_lib`.
fn openmp22(module: &mut Module, lens: &[u64], section: &str) {
    let record = Type::Struct(vec![Type::Ptr; 4]);
    let mut records = Vec::with_capacity(lens.len());
    for (i, &len) in lens.iter().enumerate() {
        let n = name(".omp_offloading.device_image", i);
        module.globals.push(Global {
            unnamed_addr: true,
            section: Some(section.into()),
            align: Some(8),
            ..internal_constant(&n, image(i, len))
        });
        let end = Const::Gep {
            inbounds: false,
            source: bytes_type(len),
            base: Box::new(global(&n)),
            indices: vec![Const::Int(64, 0), Const::Int(64, len as i64)],
        };
        records.push(Const::Struct(
            record.clone(),
            vec![global(&n), end, global(START), global(STOP)],
        ));
    }
    module.globals.push(Global {
        unnamed_addr: true,
        ..internal_constant(
            ".omp_offloading.device_images",
            Const::Array(record, records),
        )
    });
    module.globals.push(omp22_descriptor(lens.len()));
    module.globals.push(structors(
        "llvm.global_ctors",
        101,
        ".omp_offloading.descriptor_reg",
    ));
    module.functions.extend(omp22_functions());
}

/// The `__tgt_bin_desc` of the `k` images.
fn omp22_descriptor(k: usize) -> Global {
    internal_constant(
        ".omp_offloading.descriptor",
        Const::Struct(
            Type::Struct(vec![int(32), Type::Ptr, Type::Ptr, Type::Ptr]),
            vec![
                Const::Int(32, k as i64),
                global(".omp_offloading.device_images"),
                global(START),
                global(STOP),
            ],
        ),
    )
}

/// The runtime's functions of the OpenMP module, the descriptor's registration, which hands
/// its unregistration to `atexit`, and that unregistration.
fn omp22_functions() -> [Function; 4] {
    let descriptor = || vec![Value::from(global(".omp_offloading.descriptor"))];
    [
        declare("__tgt_register_lib", Type::Void, 1),
        declare("__tgt_unregister_lib", Type::Void, 1),
        startup(
            ".omp_offloading.descriptor_reg",
            &[],
            vec![block(
                "entry",
                vec![
                    inst(call("__tgt_register_lib", descriptor())),
                    named(
                        "r",
                        call(
                            "atexit",
                            vec![global(".omp_offloading.descriptor_unreg").into()],
                        ),
                    ),
                    ret(),
                ],
            )],
        ),
        startup(
            ".omp_offloading.descriptor_unreg",
            &[],
            vec![block(
                "entry",
                vec![inst(call("__tgt_unregister_lib", descriptor())), ret()],
            )],
        ),
    ]
}

/// What the CUDA and HIP modules differ in.
struct Runtime {
    /// The kind of runtime, CUDA or HIP.
    kind: OffloadKind,
    /// The prefix of the runtime's functions and of the module's names: `cuda` or `hip`.
    prefix: &'static str,
    /// The fat binary wrapper's magic.
    magic: i64,
    /// The section of the image.
    data: &'static str,
    /// The section of the wrapper.
    segment: &'static str,
    /// The kind of the runtime's entries (`llvm_offload_entries` holds entries of every
    /// runtime).
    entry_kind: i64,
}

impl Runtime {
    /// The runtime of `kind`, CUDA or HIP.
    fn of(kind: OffloadKind) -> Runtime {
        match kind {
            OffloadKind::Cuda => Runtime {
                kind,
                prefix: "cuda",
                magic: 0x466243b1,
                data: ".nv_fatbin",
                segment: ".nvFatBinSegment",
                entry_kind: 2,
            },
            _ => Runtime {
                kind,
                prefix: "hip",
                magic: 0x48495046,
                data: ".hip_fatbin",
                segment: ".hipFatBinSegment",
                entry_kind: 4,
            },
        }
    }

    /// The module's name `.{prefix}.{what}`.
    fn local(&self, what: &str) -> String {
        format!(".{}.{what}", self.prefix)
    }

    /// The runtime's function `__{prefix}{what}`.
    fn function(&self, what: &str) -> String {
        format!("__{}{what}", self.prefix)
    }
}

/// The CUDA and HIP part of [`llvm_offload_wrapper`]: the fat binary of `len` bytes, its
/// wrapper, its registration and the registration of the runtime's entries.
fn fatbinary22(module: &mut Module, made: &Made, len: u64) {
    let runtime = Runtime::of(made.kind);
    let mut globals = fatbinary_globals(&runtime, len);
    // LLVM 23 keeps the sanitizers away from the wrapper the runtime reads.
    globals[1].no_sanitize = made.llvm >= LlvmVersion::V23;
    module.globals.extend(globals);
    module.functions.extend(runtime_declarations(&runtime));
    module.functions.push(fatbin_reg(&runtime));
    module.functions.push(fatbin_unreg(&runtime));
    module.functions.push(globals_registration(&runtime));
}

/// The image of `len` bytes, its wrapper, the runtime's handle of it, and the constructor
/// that registers it.
fn fatbinary_globals(runtime: &Runtime, len: u64) -> [Global; 4] {
    [
        Global {
            section: Some(runtime.data.into()),
            ..internal_constant(".fatbin_image", image(0, len))
        },
        Global {
            section: Some(runtime.segment.into()),
            align: Some(8),
            ..internal_constant(
                ".fatbin_wrapper",
                Const::Struct(
                    Type::Struct(vec![int(32), int(32), Type::Ptr, Type::Ptr]),
                    vec![
                        Const::Int(32, runtime.magic),
                        Const::Int(32, 1),
                        global(".fatbin_image"),
                        null(),
                    ],
                ),
            )
        },
        Global {
            constant: false,
            ..internal_constant(&runtime.local("binary_handle"), null())
        },
        structors("llvm.global_ctors", 101, &runtime.local("fatbin_reg")),
    ]
}

/// The runtime's functions the CUDA and HIP modules call.
fn runtime_declarations(runtime: &Runtime) -> [Function; 8] {
    let f = |what: &str| runtime.function(what);
    let ptrs = |n: usize| vec![Type::Ptr; n];
    [
        declare(&f("RegisterFatBinary"), Type::Ptr, 1),
        declare("__cudaRegisterFatBinaryEnd", Type::Void, 1),
        declare(&f("UnregisterFatBinary"), Type::Void, 1),
        Function::declare(
            &f("RegisterFunction"),
            int(32),
            [ptrs(4), vec![int(32)], ptrs(5)].concat(),
        ),
        Function::declare(
            &f("RegisterVar"),
            Type::Void,
            [ptrs(4), vec![int(32), int(64), int(32), int(32)]].concat(),
        ),
        Function::declare(
            &f("RegisterManagedVar"),
            Type::Void,
            [ptrs(4), vec![int(64), int(32)]].concat(),
        ),
        Function::declare(
            &f("RegisterSurface"),
            Type::Void,
            [ptrs(4), vec![int(32), int(32)]].concat(),
        ),
        Function::declare(
            &f("RegisterTexture"),
            Type::Void,
            [ptrs(4), vec![int(32), int(32), int(32)]].concat(),
        ),
    ]
}

/// The constructor registering the fat binary, keeping its handle, registering the entries,
/// and handing the unregistration to `atexit`.
fn fatbin_reg(runtime: &Runtime) -> Function {
    let handle = runtime.local("binary_handle");
    let mut entry = vec![
        named(
            "h",
            call(
                &runtime.function("RegisterFatBinary"),
                vec![global(".fatbin_wrapper").into()],
            ),
        ),
        inst(Op::Store {
            value: local("h"),
            ptr: global(&handle).into(),
            align: 8,
        }),
        inst(call(&runtime.local("globals_reg"), vec![local("h")])),
    ];
    if runtime.kind == OffloadKind::Cuda {
        entry.push(inst(call("__cudaRegisterFatBinaryEnd", vec![local("h")])));
    }
    let unreg = runtime.local("fatbin_unreg");
    entry.push(named("r", call("atexit", vec![global(&unreg).into()])));
    entry.push(ret());
    startup(
        &runtime.local("fatbin_reg"),
        &[],
        vec![block("entry", entry)],
    )
}

/// The unregistration of the fat binary by its handle.
fn fatbin_unreg(runtime: &Runtime) -> Function {
    startup(
        &runtime.local("fatbin_unreg"),
        &[],
        vec![block(
            "entry",
            vec![
                named(
                    "h",
                    Op::Load {
                        ty: Type::Ptr,
                        ptr: global(&runtime.local("binary_handle")).into(),
                        align: 8,
                    },
                ),
                inst(call(
                    &runtime.function("UnregisterFatBinary"),
                    vec![local("h")],
                )),
                ret(),
            ],
        )],
    )
}

/// The block every registration block of [`globals_registration`] ends in.
const NEXT: &str = "next_entry";

/// `%at = getelementptr inbounds %entry, ptr %e, i32 0, i32 index`.
fn field(at: &str, index: i64) -> Inst {
    named(
        at,
        Op::Gep {
            inbounds: true,
            source: Type::Named(0),
            base: local("e"),
            indices: vec![int_value(32, 0), int_value(32, index)],
        },
    )
}

/// `%name = load ty, ptr %at, align align`.
fn load(name: &str, ty: Type, at: &str, align: u32) -> Inst {
    named(
        name,
        Op::Load {
            ty,
            ptr: local(at),
            align,
        },
    )
}

/// `%name = op i32 %lhs, rhs`.
fn binary(name: &str, op: BinaryOp, lhs: &str, rhs: i64) -> Inst {
    named(
        name,
        Op::Binary {
            op,
            lhs: local(lhs),
            rhs: int_value(32, rhs),
        },
    )
}

/// `%name = icmp predicate lhs, rhs`.
fn icmp(name: &str, predicate: Predicate, lhs: Value, rhs: Value) -> Inst {
    named(
        name,
        Op::ICmp {
            predicate,
            lhs,
            rhs,
        },
    )
}

/// `br i1 %cond, label %then, label %otherwise`.
fn cond_br(cond: &str, then: &str, otherwise: &str) -> Inst {
    inst(Op::CondBr {
        cond: local(cond),
        then: then.into(),
        otherwise: otherwise.into(),
    })
}

/// The locals `names`, as arguments.
fn args(names: &[&str]) -> Vec<Value> {
    names.iter().map(|n| local(n)).collect()
}

/// A block of `insts` that goes on to the next entry.
fn then_next(name: &str, mut insts: Vec<Inst>) -> Block {
    insts.push(br(NEXT));
    block(name, insts)
}

/// The function registering each entry of `llvm_offload_entries` of the runtime's kind: a
/// function (size 0), or a variable, managed variable, surface or texture by the low three
/// bits of its flags; bit 3 is `extern`, bit 4 `constant`, bit 5 `normalized`. The CUDA
/// module registers no surfaces nor textures (LLVM 22 leaves both cases empty).
fn globals_registration(runtime: &Runtime) -> Function {
    let mut blocks = vec![
        block(
            "entry",
            vec![
                icmp(
                    "any",
                    Predicate::Ne,
                    global(START).into(),
                    global(STOP).into(),
                ),
                cond_br("any", "loop", "done"),
            ],
        ),
        entry_fields(runtime.entry_kind),
        block(
            "which",
            vec![
                icmp(
                    "is_function",
                    Predicate::Eq,
                    local("size"),
                    int_value(64, 0),
                ),
                cond_br("is_function", "function", "global"),
            ],
        ),
    ];
    blocks.extend(registrations(runtime));
    blocks.push(block(
        NEXT,
        vec![
            named(
                "next",
                Op::Gep {
                    inbounds: true,
                    source: Type::Named(0),
                    base: local("e"),
                    indices: vec![int_value(64, 1)],
                },
            ),
            icmp("end", Predicate::Eq, local("next"), global(STOP).into()),
            cond_br("end", "done", "loop"),
        ],
    ));
    blocks.push(block("done", vec![ret()]));
    startup(&runtime.local("globals_reg"), &[(Type::Ptr, "h")], blocks)
}

/// The loop's head: the entry `%e`, its fields, and its flags' bits; on to `which` when the
/// entry is of `entry_kind`, else to the next entry.
fn entry_fields(entry_kind: i64) -> Block {
    block(
        "loop",
        vec![
            named(
                "e",
                Op::Phi {
                    ty: Type::Ptr,
                    incoming: vec![
                        (global(START).into(), "entry".into()),
                        (local("next"), NEXT.into()),
                    ],
                },
            ),
            field("kind_at", 2),
            load("kind", int(16), "kind_at", 2),
            field("flags_at", 3),
            load("flags", int(32), "flags_at", 4),
            field("addr_at", 4),
            load("addr", Type::Ptr, "addr_at", 8),
            field("name_at", 5),
            load("name", Type::Ptr, "name_at", 8),
            field("size_at", 6),
            load("size", int(64), "size_at", 4),
            field("data_at", 7),
            load("data64", int(64), "data_at", 4),
            named(
                "data",
                Op::Trunc {
                    value: local("data64"),
                    to: int(32),
                },
            ),
            field("aux_at", 8),
            load("aux", Type::Ptr, "aux_at", 8),
            binary("type", BinaryOp::And, "flags", 7),
            binary("ext_bit", BinaryOp::And, "flags", 8),
            binary("ext", BinaryOp::LShr, "ext_bit", 3),
            binary("const_bit", BinaryOp::And, "flags", 16),
            binary("const", BinaryOp::LShr, "const_bit", 4),
            binary("norm_bit", BinaryOp::And, "flags", 32),
            binary("norm", BinaryOp::LShr, "norm_bit", 5),
            icmp(
                "ours",
                Predicate::Eq,
                local("kind"),
                int_value(16, entry_kind),
            ),
            cond_br("ours", "which", NEXT),
        ],
    )
}

/// The blocks registering an entry: as a function, or by its type as a variable, managed
/// variable, surface or texture.
fn registrations(runtime: &Runtime) -> [Block; 6] {
    let callee = |what: &str| runtime.function(what);
    let (surface, texture) = if runtime.kind == OffloadKind::Hip {
        (
            vec![inst(call(
                &callee("RegisterSurface"),
                args(&["h", "addr", "name", "name", "data", "ext"]),
            ))],
            vec![inst(call(
                &callee("RegisterTexture"),
                args(&["h", "addr", "name", "name", "data", "norm", "ext"]),
            ))],
        )
    } else {
        (Vec::new(), Vec::new())
    };
    [
        then_next(
            "function",
            vec![named(
                "f",
                call(
                    &callee("RegisterFunction"),
                    [
                        args(&["h", "addr", "name", "name"]),
                        vec![int_value(32, -1)],
                        vec![null().into(); 5],
                    ]
                    .concat(),
                ),
            )],
        ),
        block(
            "global",
            vec![inst(Op::Switch {
                value: local("type"),
                default: NEXT.into(),
                cases: vec![
                    (0, "var".into()),
                    (1, "managed".into()),
                    (2, "surface".into()),
                    (3, "texture".into()),
                ],
            })],
        ),
        then_next(
            "var",
            vec![inst(call(
                &callee("RegisterVar"),
                [
                    args(&["h", "addr", "name", "name", "ext", "size", "const"]),
                    vec![int_value(32, 0)],
                ]
                .concat(),
            ))],
        ),
        then_next(
            "managed",
            vec![inst(call(
                &callee("RegisterManagedVar"),
                args(&["h", "aux", "addr", "name", "size", "data"]),
            ))],
        ),
        then_next("surface", surface),
        then_next("texture", texture),
    ]
}
