//! The modules of LLVM 23's `llvm-offload-wrapper` for OpenMP, CUDA and HIP, as LLVM builds
//! them: the same globals, functions, blocks, instructions and value names in the same order,
//! so that LLVM's bitcode writer and ours write the same bytes.

use crate::codegen::layout::name;
use crate::llvm::ir::module::{
    bytes_type, global, int, int_value, local, null, BinaryOp, Block, Const, Function, Global,
    Inst, Module, NamedStruct, Op, Predicate, Type, Value,
};
use crate::ops::wrapper::ir::{
    block, br, call, declare, entries_bounds, image, inst, internal_constant, named, ret,
    startup_in, structors, Format, Made,
};
use crate::ops::wrapper::OffloadKind;
use crate::target::processor::LlvmVersion;

/// The magic of an offload binary.
const OFFLOAD_BINARY_MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];

/// Where the image an OpenMP module registers starts and ends in its file: in an offload
/// binary, the image of its first entry (LLVM reads the header's entries offset, then the
/// entry's image offset and size, and nothing else), found with `read`, which fills a buffer
/// from an offset and says whether the file has those bytes; `None` for the whole file.
pub fn inner_image(read: &mut dyn FnMut(u64, &mut [u8]) -> bool) -> Option<(u64, u64)> {
    let mut header = [0u8; 24];
    if !read(0, &mut header) || header[..4] != OFFLOAD_BINARY_MAGIC {
        return None;
    }
    let word = |bytes: &[u8], at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes.get(at..at + 8)?);
        Some(u64::from_le_bytes(word))
    };
    let mut entry = [0u8; 40];
    if !read(word(&header, 16)?, &mut entry) {
        return None;
    }
    let offset = word(&entry, 24)?;
    Some((offset, offset.checked_add(word(&entry, 32)?)?))
}

/// The module of `llvm-offload-wrapper` registering the images of lengths `lens` (one for
/// CUDA and HIP) with the runtime `made.kind`, for `triple`; the OpenMP module registers of
/// image `i` the bytes `inner[i]` (start and end), when given, rather than the whole image.
pub fn llvm_offload_wrapper_of(
    made: &Made,
    triple: &str,
    lens: &[u64],
    inner: &[Option<(u64, u64)>],
) -> Module {
    let entries = Type::Array(0, Box::new(Type::Named(0)));
    let format = Format::of(triple, made.llvm);
    let mut module = Module {
        id: "offload.wrapper.module".into(),
        triple: triple.to_string(),
        structs: vec![NamedStruct {
            name: "struct.__tgt_offload_entry".into(),
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
        globals: entries_bounds(&format, entries),
        functions: Vec::new(),
    };
    match made.kind {
        OffloadKind::OpenMp => openmp(&mut module, lens, inner, made.image_section(), &format),
        OffloadKind::Cuda | OffloadKind::Hip => fatbinary(
            &mut module,
            made,
            lens.first().copied().unwrap_or(0),
            &format,
        ),
        OffloadKind::Sycl => unreachable!("SYCL's module is sycl::module"),
    }
    module
}

/// The OpenMP module: the images in `section`, their `__tgt_device_image`s and the
/// `__tgt_bin_desc`, registered with `__tgt_register_lib` by a constructor that hands the
/// unregistration to `atexit`.
fn openmp(
    module: &mut Module,
    lens: &[u64],
    inner: &[Option<(u64, u64)>],
    section: &str,
    format: &Format,
) {
    module.structs.push(NamedStruct {
        name: "__tgt_device_image".into(),
        fields: vec![Type::Ptr; 4],
    });
    module.structs.push(NamedStruct {
        name: "__tgt_bin_desc".into(),
        fields: vec![int(32), Type::Ptr, Type::Ptr, Type::Ptr],
    });
    let record = Type::Named(1);
    let mut records = Vec::with_capacity(lens.len());
    for (i, &len) in lens.iter().enumerate() {
        let n = name(".omp_offloading.device_image", i);
        module.globals.push(Global {
            unnamed_addr: true,
            section: Some(section.into()),
            align: Some(8),
            ..internal_constant(&n, image(i, len))
        });
        let (begin, end) = inner.get(i).copied().flatten().unwrap_or((0, len));
        // LLVM folds the address of the image's first byte to the image's.
        let at = |offset: u64| match offset {
            0 => global(&n),
            _ => Const::Gep {
                inbounds: false,
                source: bytes_type(len),
                base: Box::new(global(&n)),
                indices: vec![Const::Int(64, 0), Const::Int(64, offset as i64)],
            },
        };
        records.push(Const::Struct(
            record.clone(),
            vec![
                at(begin),
                at(end),
                global(format.start),
                global(format.stop),
            ],
        ));
    }
    module.globals.push(Global {
        unnamed_addr: true,
        ..internal_constant(
            ".omp_offloading.device_images",
            Const::Array(record, records),
        )
    });
    module.globals.push(internal_constant(
        ".omp_offloading.descriptor",
        Const::Struct(
            Type::Named(2),
            vec![
                Const::Int(32, lens.len() as i64),
                global(".omp_offloading.device_images"),
                global(format.start),
                global(format.stop),
            ],
        ),
    ));
    module.globals.push(structors(
        "llvm.global_ctors",
        101,
        ".omp_offloading.descriptor_reg",
    ));
    module.functions.extend(openmp_functions(format.startup));
}

/// The descriptor's registration, the runtime's functions, and the unregistration.
fn openmp_functions(section: &str) -> [Function; 5] {
    let descriptor = || vec![Value::from(global(".omp_offloading.descriptor"))];
    [
        startup_in(
            section,
            ".omp_offloading.descriptor_reg",
            &[],
            vec![block(
                "entry",
                vec![
                    inst(call("__tgt_register_lib", descriptor())),
                    named(
                        "0",
                        call(
                            "atexit",
                            vec![global(".omp_offloading.descriptor_unreg").into()],
                        ),
                    ),
                    ret(),
                ],
            )],
        ),
        declare("__tgt_register_lib", Type::Void, 1),
        declare("atexit", int(32), 1),
        startup_in(
            section,
            ".omp_offloading.descriptor_unreg",
            &[],
            vec![block(
                "entry",
                vec![inst(call("__tgt_unregister_lib", descriptor())), ret()],
            )],
        ),
        declare("__tgt_unregister_lib", Type::Void, 1),
    ]
}

/// What the CUDA and HIP modules differ in.
struct Runtime {
    kind: OffloadKind,
    /// The prefix of the runtime's functions and of the module's names: `cuda` or `hip`.
    prefix: &'static str,
    /// The fat binary wrapper's magic.
    magic: i64,
    /// The section of the image.
    data: &'static str,
    /// The section of the wrapper.
    segment: &'static str,
    /// The kind of the runtime's entries in `llvm_offload_entries`.
    entry_kind: i64,
    /// The object format's names.
    format: Format,
}

impl Runtime {
    fn of(kind: OffloadKind, format: &Format) -> Runtime {
        let format = *format;
        match kind {
            OffloadKind::Cuda => Runtime {
                kind,
                prefix: "cuda",
                magic: 0x466243b1,
                data: if format.macos_cuda {
                    "__NV_CUDA,__nv_fatbin"
                } else {
                    ".nv_fatbin"
                },
                segment: if format.macos_cuda {
                    "__NV_CUDA,__fatbin"
                } else {
                    ".nvFatBinSegment"
                },
                entry_kind: 2,
                format,
            },
            _ => Runtime {
                kind,
                prefix: "hip",
                magic: 0x48495046,
                data: if format.macos_hip {
                    "__HIP,__hip_fatbin"
                } else {
                    ".hip_fatbin"
                },
                segment: if format.macos_hip {
                    "__HIP,__fatbin"
                } else {
                    ".hipFatBinSegment"
                },
                entry_kind: 4,
                format,
            },
        }
    }

    /// A constructor, or a function it calls, in the format's section for them.
    fn startup(&self, name: &str, params: &[(Type, &str)], blocks: Vec<Block>) -> Function {
        startup_in(self.format.startup, name, params, blocks)
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

/// The CUDA and HIP module: the fat binary of `len` bytes, its wrapper, the runtime's handle
/// of it, its registration and that of the runtime's entries.
fn fatbinary(module: &mut Module, made: &Made, len: u64, format: &Format) {
    let runtime = Runtime::of(made.kind, format);
    module.structs.push(NamedStruct {
        name: "fatbin_wrapper".into(),
        fields: vec![int(32), int(32), Type::Ptr, Type::Ptr],
    });
    module.globals.extend([
        Global {
            section: Some(runtime.data.into()),
            ..internal_constant(".fatbin_image", image(0, len))
        },
        Global {
            section: Some(runtime.segment.into()),
            align: Some(8),
            // LLVM 23 keeps the sanitizers away from the wrapper the runtime reads.
            no_sanitize: made.llvm >= LlvmVersion::V23,
            ..internal_constant(
                ".fatbin_wrapper",
                Const::Struct(
                    Type::Named(1),
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
    ]);
    let f = |what: &str| runtime.function(what);
    let ptrs = |n: usize| vec![Type::Ptr; n];
    module.functions.extend([
        fatbin_reg(&runtime),
        fatbin_unreg(&runtime),
        declare(&f("RegisterFatBinary"), Type::Ptr, 1),
        declare("__cudaRegisterFatBinaryEnd", Type::Void, 1),
        declare(&f("UnregisterFatBinary"), Type::Void, 1),
        declare("atexit", int(32), 1),
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
        globals_registration(&runtime),
    ]);
}

/// The constructor registering the fat binary, keeping its handle, registering the entries,
/// and handing the unregistration to `atexit`.
fn fatbin_reg(runtime: &Runtime) -> Function {
    let mut entry = vec![
        named(
            "0",
            call(
                &runtime.function("RegisterFatBinary"),
                vec![global(".fatbin_wrapper").into()],
            ),
        ),
        inst(Op::Store {
            value: local("0"),
            ptr: global(&runtime.local("binary_handle")).into(),
            align: 8,
        }),
        inst(call(&runtime.local("globals_reg"), vec![local("0")])),
    ];
    if runtime.kind == OffloadKind::Cuda {
        entry.push(inst(call("__cudaRegisterFatBinaryEnd", vec![local("0")])));
    }
    let unreg = runtime.local("fatbin_unreg");
    entry.push(named("1", call("atexit", vec![global(&unreg).into()])));
    entry.push(ret());
    runtime.startup(
        &runtime.local("fatbin_reg"),
        &[],
        vec![block("entry", entry)],
    )
}

/// The unregistration of the fat binary by its handle.
fn fatbin_unreg(runtime: &Runtime) -> Function {
    let handle = Op::Load {
        ty: Type::Ptr,
        ptr: global(&runtime.local("binary_handle")).into(),
        align: 8,
    };
    let unregister = call(&runtime.function("UnregisterFatBinary"), vec![local("0")]);
    runtime.startup(
        &runtime.local("fatbin_unreg"),
        &[],
        vec![block(
            "entry",
            vec![named("0", handle), inst(unregister), ret()],
        )],
    )
}

/// `%at = getelementptr inbounds %struct.__tgt_offload_entry, ptr %entry1, i32 0, i32 index`.
fn field(at: &str, index: i64) -> Inst {
    named(
        at,
        Op::Gep {
            inbounds: true,
            source: Type::Named(0),
            base: local("entry1"),
            indices: vec![int_value(32, 0), int_value(32, index)],
        },
    )
}

/// `%name = load ty, ptr %at`, aligned as LLVM aligns it without a data layout.
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

/// The block every registration block ends in.
const END: &str = "if.end";

/// A block of `insts` that goes on to the next entry.
fn then_end(name: &str, mut insts: Vec<Inst>) -> Block {
    insts.push(br(END));
    block(name, insts)
}

/// The function registering each entry of `llvm_offload_entries` of the runtime's kind: a
/// function (size 0), or a variable, managed variable, surface or texture by the low three
/// bits of its flags; bit 3 is `extern`, bit 4 `constant`, bit 5 `normalized`. The CUDA
/// module registers no surfaces nor textures.
fn globals_registration(runtime: &Runtime) -> Function {
    let mut blocks = vec![
        block(
            "entry",
            vec![
                icmp(
                    "1",
                    Predicate::Ne,
                    global(runtime.format.start).into(),
                    global(runtime.format.stop).into(),
                ),
                cond_br("1", "while.entry", "while.end"),
            ],
        ),
        entry_fields(runtime.entry_kind, runtime.format.start),
        block(
            "if.kind",
            vec![
                icmp("14", Predicate::Eq, local("size"), int_value(64, 0)),
                cond_br("14", "if.then", "if.else"),
            ],
        ),
    ];
    blocks.extend(registrations(runtime));
    blocks.push(block(
        END,
        vec![
            named(
                "16",
                Op::Gep {
                    inbounds: true,
                    source: Type::Named(0),
                    base: local("entry1"),
                    indices: vec![int_value(64, 1)],
                },
            ),
            icmp(
                "17",
                Predicate::Eq,
                local("16"),
                global(runtime.format.stop).into(),
            ),
            cond_br("17", "while.end", "while.entry"),
        ],
    ));
    blocks.push(block("while.end", vec![ret()]));
    runtime.startup(&runtime.local("globals_reg"), &[(Type::Ptr, "0")], blocks)
}

/// The loop's head: the entry, its fields, and its flags' bits; on to `if.kind` when the
/// entry is of `entry_kind`, else to the next entry.
fn entry_fields(entry_kind: i64, start: &str) -> Block {
    block(
        "while.entry",
        vec![
            named(
                "entry1",
                Op::Phi {
                    ty: Type::Ptr,
                    incoming: vec![
                        (global(start).into(), "entry".into()),
                        (local("16"), END.into()),
                    ],
                },
            ),
            field("2", 4),
            load("addr", Type::Ptr, "2", 8),
            field("3", 8),
            load("aux_addr", Type::Ptr, "3", 8),
            field("4", 2),
            load("kind", int(16), "4", 2),
            field("5", 5),
            load("name", Type::Ptr, "5", 8),
            field("6", 6),
            load("size", int(64), "6", 4),
            field("7", 3),
            load("flags", int(32), "7", 4),
            field("8", 7),
            load("data", int(64), "8", 4),
            named(
                "9",
                Op::Trunc {
                    value: local("data"),
                    to: int(32),
                },
            ),
            binary("type", BinaryOp::And, "flags", 7),
            binary("10", BinaryOp::And, "flags", 8),
            binary("extern", BinaryOp::LShr, "10", 3),
            binary("11", BinaryOp::And, "flags", 16),
            binary("constant", BinaryOp::LShr, "11", 4),
            binary("12", BinaryOp::And, "flags", 32),
            binary("normalized", BinaryOp::LShr, "12", 5),
            icmp(
                "13",
                Predicate::Eq,
                local("kind"),
                int_value(16, entry_kind),
            ),
            cond_br("13", "if.kind", END),
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
                args(&["0", "addr", "name", "name", "9", "extern"]),
            ))],
            vec![inst(call(
                &callee("RegisterTexture"),
                args(&["0", "addr", "name", "name", "9", "normalized", "extern"]),
            ))],
        )
    } else {
        (Vec::new(), Vec::new())
    };
    [
        then_end(
            "if.then",
            vec![named(
                "15",
                call(
                    &callee("RegisterFunction"),
                    [
                        args(&["0", "addr", "name", "name"]),
                        vec![int_value(32, -1)],
                        vec![null().into(); 5],
                    ]
                    .concat(),
                ),
            )],
        ),
        block(
            "if.else",
            vec![inst(Op::Switch {
                value: local("type"),
                default: END.into(),
                cases: vec![
                    (0, "sw.global".into()),
                    (1, "sw.managed".into()),
                    (2, "sw.surface".into()),
                    (3, "sw.texture".into()),
                ],
            })],
        ),
        then_end(
            "sw.global",
            vec![inst(call(
                &callee("RegisterVar"),
                [
                    args(&["0", "addr", "name", "name", "extern", "size", "constant"]),
                    vec![int_value(32, 0)],
                ]
                .concat(),
            ))],
        ),
        then_end(
            "sw.managed",
            vec![inst(call(
                &callee("RegisterManagedVar"),
                args(&["0", "aux_addr", "addr", "name", "size", "9"]),
            ))],
        ),
        then_end("sw.surface", surface),
        then_end("sw.texture", texture),
    ]
}
