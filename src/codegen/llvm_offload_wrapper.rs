//! The modules of LLVM 22's `llvm-offload-wrapper` as native relocatable objects: ELF x86-64
//! and AArch64, COFF x86-64 (laid out as [`crate::codegen::layout`] says, the images copied in
//! afterwards). The sections, symbols and relocations are those clang-22 gives the module's
//! bitcode; the machine code is this module's.
//!
//! HIP and CUDA (`P` is `hip` or `cuda`):
//! - `.fatbin_image` in `.hip_fatbin` / `.nv_fatbin`: the image;
//! - `.fatbin_wrapper` in `.hipFatBinSegment` / `.nvFatBinSegment`: `{magic, 1, image, null}`;
//! - `.P.binary_handle` in `.bss`: what `__PRegisterFatBinary` returned;
//! - `.P.fatbin_reg` (priority 101): registers the wrapper, then each entry of
//!   `llvm_offload_entries` of the runtime's kind (`.P.globals_reg`), CUDA then calls
//!   `__cudaRegisterFatBinaryEnd`; and hands `.P.fatbin_unreg` to `atexit`.
//!
//! OpenMP: the images `.omp_offloading.device_image[.N]` in `.llvm.offloading`, their
//! `__tgt_device_image`s and the `__tgt_bin_desc` (`.data.rel.ro`; `.rdata` on COFF),
//! `.omp_offloading.descriptor_reg` (priority 101) calling `__tgt_register_lib` and handing
//! `.omp_offloading.descriptor_unreg` to `atexit`.
//!
//! The entries' bounds: on ELF the linker's `__start_`/`__stop_llvm_offload_entries` (hidden),
//! with the zero-size `__dummy.llvm_offload_entries` keeping the section; on COFF weak
//! externals whose defaults are in the grouped sections `llvm_offload_entries$OA` and `$OZ`, so
//! that the linker's sorting of `llvm_offload_entries$OE` between them bounds the entries.

use object::write::{Object, SectionId, Symbol, SymbolId, SymbolSection};
use object::{SectionFlags, SectionKind, SymbolFlags, SymbolKind, SymbolScope};

use crate::codegen::layout::name;
use crate::codegen::layout::{
    add_format_symbols, add_function_pointer, add_images, add_section, add_stack_note,
    add_tables_section, define_functions, function_symbol, lay_out, local_symbol, pointer,
    runtime_function, Function, Host, Laid, Placed, Run,
};
use crate::codegen::{a64, x86};
use crate::error::Result;

/// The runtime an `llvm-offload-wrapper` module registers its image with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffloadKind {
    /// libomptarget: a `__tgt_bin_desc` of the images, `__tgt_register_lib`.
    OpenMp,
    /// The CUDA runtime: one fat binary in `.nvFatBinSegment`, `__cudaRegisterFatBinary`.
    Cuda,
    /// The HIP runtime: one fat binary in `.hipFatBinSegment`, `__hipRegisterFatBinary`.
    Hip,
    /// The SYCL runtime (LLVM 23): one image in `.llvm.offloading`, `__sycl_register_lib`
    /// (bitcode and IR text only).
    Sycl,
}

/// The priority of LLVM's constructors.
const PRIORITY: u16 = 101;

/// The size of LLVM 22's `__tgt_offload_entry`.
const ENTRY_SIZE: u8 = 56;

/// The fields of an `__tgt_offload_entry` the registration reads (byte offsets).
mod field {
    pub const KIND: u8 = 10;
    pub const FLAGS: u8 = 12;
    pub const ADDR: u8 = 16;
    pub const NAME: u8 = 24;
    pub const SIZE: u8 = 32;
    pub const DATA: u8 = 40;
    pub const AUX: u8 = 48;
}

/// `SHT_LLVM_OFFLOADING`, the ELF type of `.llvm.offloading`.
const SHT_LLVM_OFFLOADING: object::elf::SectionType = object::elf::SectionType(0x6fff_4c0b);

/// The module of `kind` for `host`, wrapping images of the given lengths (one for HIP and
/// CUDA).
pub fn native_object22(kind: OffloadKind, host: Host, images: &[u64]) -> Result<Laid> {
    let mut obj = host.object();
    add_file_symbol(&mut obj);
    add_format_symbols(&mut obj, host);
    let text = add_section(&mut obj, host, ".text.startup", SectionKind::Text);
    let entries = add_entries(&mut obj, host);
    match kind {
        OffloadKind::OpenMp => openmp(obj, host, text, &entries, images),
        OffloadKind::Hip | OffloadKind::Cuda => fatbin(obj, host, text, &entries, kind, images[0]),
        OffloadKind::Sycl => Err(crate::error::Error::msg(
            "--kind=sycl is written as bitcode or IR text, not as a native object",
        )),
    }
}

/// The source file symbol LLVM gives the module.
fn add_file_symbol(obj: &mut Object) {
    obj.add_file_symbol(b"offload.wrapper.module".to_vec());
}

/// The bounds of the offload entries table.
struct Entries {
    start: SymbolId,
    stop: SymbolId,
}

fn add_entries(obj: &mut Object, host: Host) -> Entries {
    let entries_section = |obj: &mut Object, name: &str| {
        let section = add_section(obj, host, name, SectionKind::ReadOnlyData);
        obj.append_section_data(section, &[], 8);
        section
    };
    if host.is_coff() {
        let start = entries_section(obj, "llvm_offload_entries$OA");
        let stop = entries_section(obj, "llvm_offload_entries$OZ");
        let bound = |obj: &mut Object, name: &str, section| {
            obj.add_symbol(Symbol {
                name: name.as_bytes().to_vec(),
                value: 0,
                size: 0,
                kind: SymbolKind::Data,
                scope: SymbolScope::Linkage,
                weak: true,
                section: SymbolSection::Section(section),
                flags: SymbolFlags::None,
            })
        };
        return Entries {
            start: bound(obj, "__start_llvm_offload_entries", start),
            stop: bound(obj, "__stop_llvm_offload_entries", stop),
        };
    }
    let section = entries_section(obj, "llvm_offload_entries");
    local_symbol(
        obj,
        "__dummy.llvm_offload_entries",
        section,
        0,
        0,
        SymbolKind::Data,
    );
    let bound = |obj: &mut Object, name: &str| {
        crate::codegen::layout::undefined(
            obj,
            name,
            SymbolKind::Unknown,
            SymbolScope::Linkage,
            false,
        )
    };
    Entries {
        start: bound(obj, "__start_llvm_offload_entries"),
        stop: bound(obj, "__stop_llvm_offload_entries"),
    }
}

/// The HIP or CUDA module.
fn fatbin(
    mut obj: Object,
    host: Host,
    text: SectionId,
    entries: &Entries,
    kind: OffloadKind,
    image: u64,
) -> Result<Laid> {
    let runtime = Runtime::of(kind);
    let p = runtime.prefix;
    let reg = function_symbol(&mut obj, text, &format!(".{p}.fatbin_reg"));
    let unreg = function_symbol(&mut obj, text, &format!(".{p}.fatbin_unreg"));
    let globals = function_symbol(&mut obj, text, &format!(".{p}.globals_reg"));
    let (images, wrapper) = add_fatbin_wrapper(&mut obj, host, &runtime, image)?;
    let handle = add_handle(&mut obj, host, p);
    let own = ModuleSymbols {
        wrapper,
        handle,
        globals,
        unreg,
    };
    let calls = Calls::declare(&mut obj, &runtime, entries, own);
    let (fatbin_reg, fatbin_unreg, globals_reg) = match x86::conventions(host) {
        Some((conv, format)) => calls.x86_64(conv, format),
        None => calls.aarch64(),
    };
    define_functions(
        &mut obj,
        host,
        text,
        vec![
            (reg, fatbin_reg),
            (unreg, fatbin_unreg),
            (globals, globals_reg),
        ],
    )?;
    add_function_pointer(&mut obj, host, Run::AtStartup, PRIORITY, reg)?;
    add_stack_note(&mut obj, host);
    lay_out(&obj, host, &images)
}

/// The fat binary of `image` bytes in the runtime's image section, and its wrapper
/// `{magic, 1, image, null}` in the runtime's wrapper section; the image and the wrapper's
/// symbol.
fn add_fatbin_wrapper(
    obj: &mut Object,
    host: Host,
    runtime: &Runtime,
    image: u64,
) -> Result<(Placed, SymbolId)> {
    let image_section = add_section(obj, host, runtime.image_section, SectionKind::ReadOnlyData);
    let images = add_images(obj, image_section, 16, &[image], |_| {
        ".fatbin_image".to_string()
    });
    let wrapper_kind = if host.is_coff() {
        SectionKind::ReadOnlyData
    } else {
        SectionKind::Data
    };
    let segment = add_section(obj, host, runtime.wrapper_section, wrapper_kind);
    let mut wrapper = [0u8; 24];
    wrapper[0..4].copy_from_slice(&runtime.magic.to_le_bytes());
    wrapper[4..8].copy_from_slice(&1u32.to_le_bytes());
    let at = obj.append_section_data(segment, &wrapper, 8);
    let wrapper = local_symbol(obj, ".fatbin_wrapper", segment, at, 24, SymbolKind::Data);
    pointer(obj, host, segment, at + 8, images.symbols[0], 0)?;
    Ok((images, wrapper))
}

/// `.P.binary_handle` in `.bss`, for the runtime of prefix `p`.
fn add_handle(obj: &mut Object, host: Host, p: &str) -> SymbolId {
    let bss = add_section(obj, host, ".bss", SectionKind::UninitializedData);
    let at = obj.append_section_bss(bss, 8, 8);
    local_symbol(
        obj,
        &format!(".{p}.binary_handle"),
        bss,
        at,
        8,
        SymbolKind::Data,
    )
}

/// What distinguishes the HIP module from the CUDA one.
struct Runtime {
    prefix: &'static str,
    magic: u32,
    image_section: &'static str,
    wrapper_section: &'static str,
    /// The entries' kind of the runtime (`llvm_offload_entries` holds those of every runtime).
    entry_kind: u8,
    /// Whether surfaces and textures are registered (LLVM 22's CUDA module skips them).
    surfaces: bool,
    /// Whether `__cudaRegisterFatBinaryEnd` follows the registrations.
    end: bool,
}

impl Runtime {
    fn of(kind: OffloadKind) -> Runtime {
        match kind {
            OffloadKind::Cuda => Runtime {
                prefix: "cuda",
                magic: 0x466243b1,
                image_section: ".nv_fatbin",
                wrapper_section: ".nvFatBinSegment",
                entry_kind: 2,
                surfaces: false,
                end: true,
            },
            _ => Runtime {
                prefix: "hip",
                magic: 0x48495046,
                image_section: ".hip_fatbin",
                wrapper_section: ".hipFatBinSegment",
                entry_kind: 4,
                surfaces: true,
                end: false,
            },
        }
    }
}

/// An argument of a registration call, read from the entry being registered.
#[derive(Debug, Clone, Copy)]
enum Arg {
    /// The handle `__PRegisterFatBinary` returned.
    Handle,
    /// A pointer or 64-bit field of the entry.
    Field(u8),
    /// The low 32 bits of a field of the entry.
    Low32(u8),
    /// Bit `n` of the entry's flags (3 `extern`, 4 `constant`, 5 `normalized`).
    FlagBit(u8),
    /// A constant.
    Imm(i32),
}

/// The HIP or CUDA module's own symbols its registration refers to.
struct ModuleSymbols {
    wrapper: SymbolId,
    handle: SymbolId,
    globals: SymbolId,
    unreg: SymbolId,
}

/// The symbols the HIP or CUDA registration refers to.
struct Calls {
    register: SymbolId,
    end: Option<SymbolId>,
    atexit: SymbolId,
    unregister: SymbolId,
    function: SymbolId,
    var: SymbolId,
    managed: SymbolId,
    surface: Option<SymbolId>,
    texture: Option<SymbolId>,
    wrapper: SymbolId,
    handle: SymbolId,
    globals: SymbolId,
    unreg: SymbolId,
    start: SymbolId,
    stop: SymbolId,
    entry_kind: u8,
}

impl Calls {
    /// Declares the runtime's functions, in the order LLVM's module does; with the module's
    /// own symbols `own` and the entries' bounds, what the registration refers to.
    fn declare(
        obj: &mut Object,
        runtime: &Runtime,
        entries: &Entries,
        own: ModuleSymbols,
    ) -> Calls {
        let p = runtime.prefix;
        let ModuleSymbols {
            wrapper,
            handle,
            globals,
            unreg,
        } = own;
        Calls {
            register: runtime_function(obj, &format!("__{p}RegisterFatBinary")),
            end: runtime
                .end
                .then(|| runtime_function(obj, "__cudaRegisterFatBinaryEnd")),
            atexit: runtime_function(obj, "atexit"),
            unregister: runtime_function(obj, &format!("__{p}UnregisterFatBinary")),
            function: runtime_function(obj, &format!("__{p}RegisterFunction")),
            var: runtime_function(obj, &format!("__{p}RegisterVar")),
            managed: runtime_function(obj, &format!("__{p}RegisterManagedVar")),
            surface: runtime
                .surfaces
                .then(|| runtime_function(obj, &format!("__{p}RegisterSurface"))),
            texture: runtime
                .surfaces
                .then(|| runtime_function(obj, &format!("__{p}RegisterTexture"))),
            wrapper,
            handle,
            globals,
            unreg,
            start: entries.start,
            stop: entries.stop,
            entry_kind: runtime.entry_kind,
        }
    }

    /// A function entry (size 0): `__PRegisterFunction(h, addr, name, name, -1, null x5)`.
    fn function_args() -> Vec<Arg> {
        use field::*;
        let mut args = vec![
            Arg::Handle,
            Arg::Field(ADDR),
            Arg::Field(NAME),
            Arg::Field(NAME),
            Arg::Imm(-1),
        ];
        args.extend([Arg::Imm(0); 5]);
        args
    }

    /// The registrations of a global by its type (the flags' low three bits): the type, the
    /// function and its arguments.
    fn global_calls(&self) -> Vec<(u8, SymbolId, Vec<Arg>)> {
        use field::*;
        let common = [
            Arg::Handle,
            Arg::Field(ADDR),
            Arg::Field(NAME),
            Arg::Field(NAME),
        ];
        let mut calls = vec![
            (0, self.var, {
                let mut args = common.to_vec();
                args.extend([
                    Arg::FlagBit(3),
                    Arg::Field(SIZE),
                    Arg::FlagBit(4),
                    Arg::Imm(0),
                ]);
                args
            }),
            (
                1,
                self.managed,
                vec![
                    Arg::Handle,
                    Arg::Field(AUX),
                    Arg::Field(ADDR),
                    Arg::Field(NAME),
                    Arg::Field(SIZE),
                    Arg::Low32(DATA),
                ],
            ),
        ];
        if let Some(surface) = self.surface {
            let mut args = common.to_vec();
            args.extend([Arg::Low32(DATA), Arg::FlagBit(3)]);
            calls.push((2, surface, args));
        }
        if let Some(texture) = self.texture {
            let mut args = common.to_vec();
            args.extend([Arg::Low32(DATA), Arg::FlagBit(5), Arg::FlagBit(3)]);
            calls.push((3, texture, args));
        }
        calls
    }

    /// `.P.fatbin_reg`, `.P.fatbin_unreg` and `.P.globals_reg` for x86-64.
    fn x86_64(&self, conv: x86::Conv, format: x86::Format) -> (Function, Function, Function) {
        use x86::Reg::{Rax, Rbx};
        let arg = conv.first();
        // fatbin_reg: rbx keeps the handle (and, pushed, aligns the stack).
        let mut r = x86::Asm::new(format);
        r.push(Rbx);
        if conv.shadow() > 0 {
            r.sub_rsp(conv.shadow());
        }
        r.lea(arg, self.wrapper, 0);
        r.call(self.register);
        r.store_rip(self.handle, Rax);
        r.mov(Rbx, Rax);
        r.mov(arg, Rax);
        r.call(self.globals);
        if let Some(end) = self.end {
            r.mov(arg, Rbx);
            r.call(end);
        }
        r.lea(arg, self.unreg, 0);
        r.call(self.atexit);
        if conv.shadow() > 0 {
            r.add_rsp(conv.shadow());
        }
        r.pop(Rbx);
        r.ret();
        // fatbin_unreg
        let mut u = x86::Asm::new(format);
        u.sub_rsp(8 + conv.shadow());
        u.load_rip(arg, self.handle);
        u.call(self.unregister);
        u.add_rsp(8 + conv.shadow());
        u.ret();
        (r.finish(), u.finish(), self.x86_64_globals(conv, format))
    }

    /// `.P.globals_reg(handle)` for x86-64: rbx walks the entries up to r13, r12 holds the
    /// handle.
    fn x86_64_globals(&self, conv: x86::Conv, format: x86::Format) -> Function {
        use x86::{Cond, Reg::*};
        // Three pushes align the stack; below them the outgoing arguments of the call with the
        // most (10, `__PRegisterFunction`).
        let outgoing = (conv.stack_slot(10) + 15) / 16 * 16;
        let mut g = x86::Asm::new(format);
        let (top, next, done, function) = (g.label(), g.label(), g.label(), g.label());
        g.push(Rbx);
        g.push(R12);
        g.push(R13);
        g.sub_rsp(outgoing);
        g.mov(R12, conv.first());
        g.lea(Rbx, self.start, 0);
        g.lea(R13, self.stop, 0);
        g.cmp(Rbx, R13);
        g.jump_if(Cond::Equal, done);
        g.bind(top);
        g.load16(Rax, Rbx, field::KIND as i8);
        g.cmp_imm(Rax, self.entry_kind as i8);
        g.jump_if(Cond::NotEqual, next);
        g.load64(Rax, Rbx, field::SIZE as i8);
        g.test(Rax);
        g.jump_if(Cond::Equal, function);
        g.load32(Rax, Rbx, field::FLAGS as i8);
        g.and_imm(Rax, 7);
        let globals: Vec<_> = self
            .global_calls()
            .into_iter()
            .map(|(ty, target, args)| (ty, target, args, g.label()))
            .collect();
        for (ty, _, _, label) in &globals {
            g.cmp_imm(Rax, *ty as i8);
            g.jump_if(Cond::Equal, *label);
        }
        g.jump(next);
        g.bind(function);
        x86_call(&mut g, conv, self.function, &Calls::function_args());
        g.jump(next);
        for (_, target, args, label) in &globals {
            g.bind(*label);
            x86_call(&mut g, conv, *target, args);
            g.jump(next);
        }
        g.bind(next);
        g.add_imm(Rbx, ENTRY_SIZE as i8);
        g.cmp(Rbx, R13);
        g.jump_if(Cond::NotEqual, top);
        g.bind(done);
        g.add_rsp(outgoing);
        g.pop(R13);
        g.pop(R12);
        g.pop(Rbx);
        g.ret();
        g.finish()
    }

    /// `.P.fatbin_reg`, `.P.fatbin_unreg` and `.P.globals_reg` for AArch64.
    fn aarch64(&self) -> (Function, Function, Function) {
        use a64::{FP, LR, SP};
        // fatbin_reg: x19 keeps the handle; x8 is a scratch register for addresses.
        let mut r = a64::Asm::default();
        r.push_pair(FP, LR, 32);
        r.add_imm(FP, SP, 0);
        r.store64(19, SP, 16);
        r.address(0, self.wrapper, 0);
        r.call(self.register);
        r.store_to(0, 8, self.handle);
        r.mov(19, 0);
        r.call(self.globals);
        if let Some(end) = self.end {
            r.mov(0, 19);
            r.call(end);
        }
        r.address(0, self.unreg, 0);
        r.call(self.atexit);
        r.load64(19, SP, 16);
        r.pop_pair(FP, LR, 32);
        r.ret();
        // fatbin_unreg
        let mut u = a64::Asm::default();
        u.push_pair(FP, LR, 16);
        u.add_imm(FP, SP, 0);
        u.load_from(0, 8, self.handle);
        u.call(self.unregister);
        u.pop_pair(FP, LR, 16);
        u.ret();
        (r.finish(), u.finish(), self.aarch64_globals())
    }

    /// `.P.globals_reg(handle)` for AArch64: x19 walks the entries up to x20, x21 holds the
    /// handle, x9 is scratch. The frame: two outgoing stack arguments at sp, x21 at 16, the
    /// frame record at 32, x19 and x20 at 48.
    fn aarch64_globals(&self) -> Function {
        use a64::{Cond, FP, LR, SP};
        let mut g = a64::Asm::default();
        let (top, next, done, function) = (g.label(), g.label(), g.label(), g.label());
        g.sub_imm(SP, SP, 64);
        g.store_pair(FP, LR, SP, 32);
        g.add_imm(FP, SP, 32);
        g.store_pair(19, 20, SP, 48);
        g.store64(21, SP, 16);
        g.mov(21, 0);
        g.address(19, self.start, 0);
        g.address(20, self.stop, 0);
        g.cmp(19, 20);
        g.branch_if(Cond::Equal, done);
        g.bind(top);
        g.load16(9, 19, field::KIND.into());
        g.cmp_imm(9, self.entry_kind.into());
        g.branch_if(Cond::NotEqual, next);
        g.load64(9, 19, field::SIZE.into());
        g.branch_if_zero(9, function);
        g.load32(9, 19, field::FLAGS.into());
        g.extract(9, 9, 0, 3);
        let globals: Vec<_> = self
            .global_calls()
            .into_iter()
            .map(|(ty, target, args)| (ty, target, args, g.label()))
            .collect();
        for (ty, _, _, label) in &globals {
            g.cmp_imm(9, (*ty).into());
            g.branch_if(Cond::Equal, *label);
        }
        g.jump(next);
        g.bind(function);
        aarch64_call(&mut g, self.function, &Calls::function_args());
        g.jump(next);
        for (_, target, args, label) in &globals {
            g.bind(*label);
            aarch64_call(&mut g, *target, args);
            g.jump(next);
        }
        g.bind(next);
        g.add_imm(19, 19, ENTRY_SIZE.into());
        g.cmp(19, 20);
        g.branch_if(Cond::NotEqual, top);
        g.bind(done);
        g.load64(21, SP, 16);
        g.load_pair(19, 20, SP, 48);
        g.load_pair(FP, LR, SP, 32);
        g.add_imm(SP, SP, 64);
        g.ret();
        g.finish()
    }
}

/// Puts `arg` into `dst` (x86-64: the entry at rbx, the handle in r12).
fn x86_arg(g: &mut x86::Asm, dst: x86::Reg, arg: Arg) {
    use x86::Reg::{Rbx, R12};
    match arg {
        Arg::Handle => g.mov(dst, R12),
        Arg::Field(offset) => g.load64(dst, Rbx, offset as i8),
        Arg::Low32(offset) => g.load32(dst, Rbx, offset as i8),
        Arg::FlagBit(bit) => {
            g.load32(dst, Rbx, field::FLAGS as i8);
            g.shr(dst, bit);
            g.and_imm(dst, 1);
        }
        Arg::Imm(0) => g.zero(dst),
        Arg::Imm(value) => g.mov_imm32(dst, value),
    }
}

/// Calls `target` with `args` (x86-64): the stack arguments first, through rax, then the
/// registers.
fn x86_call(g: &mut x86::Asm, conv: x86::Conv, target: SymbolId, args: &[Arg]) {
    let registers = conv.registers();
    for (index, &arg) in args.iter().enumerate().skip(registers.len()) {
        let slot = conv.stack_slot(index);
        match arg {
            Arg::Imm(value) => g.store64_imm(x86::Reg::Rsp, slot, value),
            _ => {
                x86_arg(g, x86::Reg::Rax, arg);
                g.store64(x86::Reg::Rsp, slot, x86::Reg::Rax);
            }
        }
    }
    for (&arg, &register) in args.iter().zip(registers) {
        x86_arg(g, register, arg);
    }
    g.call(target);
}

/// Puts `arg` into `xd` (AArch64: the entry at x19, the handle in x21).
fn aarch64_arg(g: &mut a64::Asm, d: a64::X, arg: Arg) {
    match arg {
        Arg::Handle => g.mov(d, 21),
        Arg::Field(offset) => g.load64(d, 19, offset.into()),
        Arg::Low32(offset) => g.load32(d, 19, offset.into()),
        Arg::FlagBit(bit) => {
            g.load32(d, 19, field::FLAGS.into());
            g.extract(d, d, bit.into(), 1);
        }
        Arg::Imm(0) => g.zero(d),
        Arg::Imm(-1) => g.minus_one(d),
        Arg::Imm(other) => unreachable!("no registration passes {other}"),
    }
}

/// Calls `target` with `args` (AArch64): eight in x0..x7, the rest on the stack through x9.
fn aarch64_call(g: &mut a64::Asm, target: SymbolId, args: &[Arg]) {
    for (index, &arg) in args.iter().enumerate().skip(8) {
        aarch64_arg(g, 9, arg);
        g.store64(9, a64::SP, 8 * (index as u32 - 8));
    }
    for (register, &arg) in args.iter().take(8).enumerate() {
        aarch64_arg(g, register as a64::X, arg);
    }
    g.call(target);
}

/// The OpenMP module.
fn openmp(
    mut obj: Object,
    host: Host,
    text: SectionId,
    entries: &Entries,
    images: &[u64],
) -> Result<Laid> {
    let reg = function_symbol(&mut obj, text, ".omp_offloading.descriptor_reg");
    let unreg = function_symbol(&mut obj, text, ".omp_offloading.descriptor_unreg");
    let placed = add_offloading_images(&mut obj, host, images);
    let descriptor = add_descriptor(&mut obj, host, entries, &placed)?;
    let calls = OmpCalls {
        descriptor,
        unreg,
        register: runtime_function(&mut obj, "__tgt_register_lib"),
        atexit: runtime_function(&mut obj, "atexit"),
        unregister: runtime_function(&mut obj, "__tgt_unregister_lib"),
    };
    let (reg_code, unreg_code) = match x86::conventions(host) {
        Some((conv, format)) => calls.x86_64(conv, format),
        None => calls.aarch64(),
    };
    define_functions(
        &mut obj,
        host,
        text,
        vec![(reg, reg_code), (unreg, unreg_code)],
    )?;
    add_function_pointer(&mut obj, host, Run::AtStartup, PRIORITY, reg)?;
    add_stack_note(&mut obj, host);
    lay_out(&obj, host, &placed)
}

/// The OpenMP images of lengths `images` in `.llvm.offloading` (`SHT_LLVM_OFFLOADING` on
/// ELF).
fn add_offloading_images(obj: &mut Object, host: Host, images: &[u64]) -> Placed {
    let image_section = add_section(obj, host, ".llvm.offloading", SectionKind::ReadOnlyData);
    if !host.is_coff() {
        obj.section_mut(image_section).flags = SectionFlags::Elf {
            sh_type: SHT_LLVM_OFFLOADING,
            sh_flags: object::elf::SectionFlags(object::elf::SHF_ALLOC.0),
        };
    }
    add_images(obj, image_section, 8, images, |i| {
        name(".omp_offloading.device_image", i)
    })
}

/// The `__tgt_device_image` of each of the `placed` images (its start and end, the entries'
/// bounds) and, after them, the `__tgt_bin_desc`; the descriptor's symbol.
fn add_descriptor(
    obj: &mut Object,
    host: Host,
    entries: &Entries,
    placed: &Placed,
) -> Result<SymbolId> {
    let tables = add_tables_section(obj, host);
    let n = placed.symbols.len();
    let count = n as u64;
    let mut data = vec![0u8; 32 * n + 32];
    data[32 * n..][..4].copy_from_slice(&(n as u32).to_le_bytes());
    let base = obj.append_section_data(tables, &data, 16);
    let table = local_symbol(
        obj,
        ".omp_offloading.device_images",
        tables,
        base,
        32 * count,
        SymbolKind::Data,
    );
    let descriptor = local_symbol(
        obj,
        ".omp_offloading.descriptor",
        tables,
        base + 32 * count,
        32,
        SymbolKind::Data,
    );
    for (i, (&image, &len)) in placed.symbols.iter().zip(&placed.len).enumerate() {
        let at = base + 32 * i as u64;
        pointer(obj, host, tables, at, image, 0)?;
        pointer(obj, host, tables, at + 8, image, len as i64)?;
        pointer(obj, host, tables, at + 16, entries.start, 0)?;
        pointer(obj, host, tables, at + 24, entries.stop, 0)?;
    }
    let at = base + 32 * count;
    pointer(obj, host, tables, at + 8, table, 0)?;
    pointer(obj, host, tables, at + 16, entries.start, 0)?;
    pointer(obj, host, tables, at + 24, entries.stop, 0)?;
    Ok(descriptor)
}

/// The symbols the OpenMP registration refers to.
struct OmpCalls {
    descriptor: SymbolId,
    unreg: SymbolId,
    register: SymbolId,
    atexit: SymbolId,
    unregister: SymbolId,
}

impl OmpCalls {
    /// The registration and unregistration on x86-64.
    fn x86_64(&self, conv: x86::Conv, format: x86::Format) -> (Function, Function) {
        let arg = conv.first();
        let frame = 8 + conv.shadow();
        let mut r = x86::Asm::new(format);
        r.sub_rsp(frame);
        r.lea(arg, self.descriptor, 0);
        r.call(self.register);
        r.lea(arg, self.unreg, 0);
        r.call(self.atexit);
        r.add_rsp(frame);
        r.ret();
        let mut u = x86::Asm::new(format);
        u.sub_rsp(frame);
        u.lea(arg, self.descriptor, 0);
        u.call(self.unregister);
        u.add_rsp(frame);
        u.ret();
        (r.finish(), u.finish())
    }

    /// The registration and unregistration on AArch64.
    fn aarch64(&self) -> (Function, Function) {
        use a64::{FP, LR, SP};
        let mut r = a64::Asm::default();
        r.push_pair(FP, LR, 16);
        r.add_imm(FP, SP, 0);
        r.address(0, self.descriptor, 0);
        r.call(self.register);
        r.address(0, self.unreg, 0);
        r.call(self.atexit);
        r.pop_pair(FP, LR, 16);
        r.ret();
        let mut u = a64::Asm::default();
        u.push_pair(FP, LR, 16);
        u.add_imm(FP, SP, 0);
        u.address(0, self.descriptor, 0);
        u.call(self.unregister);
        u.pop_pair(FP, LR, 16);
        u.ret();
        (r.finish(), u.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::layout::{run_with_runtime, Image};
    use crate::ops::support::tool_path::reference_tool;
    use std::path::Path;

    /// The module of `kind` for `host` wrapping `image`, run against the stand-in runtime built
    /// with `defines`: what the program prints.
    fn run(cc: &Path, kind: OffloadKind, host: Host, image: &Path, defines: &[&str]) -> String {
        let images = vec![Image::open(image).unwrap()];
        let laid = native_object22(kind, host, &[images[0].len()]).unwrap();
        run_with_runtime(cc, &laid, &images, "offload_runtime22.c", defines)
    }

    /// The Microsoft x64 code of COFF objects, run on Linux in an ELF object against the
    /// stand-in runtime built with `ms_abi`, registers exactly what the System V code does:
    /// every argument in its register or stack slot past the shadow space.
    #[test]
    fn microsoft_x64_code_registers_what_system_v_code_does() {
        let Some(cc) = reference_tool("clang-22") else {
            return;
        };
        let image = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/dev/kernel-gfx906.hsaco");
        let ms_abi = ["-DRUNTIME_ABI=__attribute__((ms_abi))"];
        for kind in [OffloadKind::Hip, OffloadKind::Cuda, OffloadKind::OpenMp] {
            let system_v = run(&cc, kind, Host::ElfX86_64, &image, &[]);
            assert!(system_v.contains("register"), "{system_v}");
            assert!(system_v.contains("function_a"), "{system_v}");
            let microsoft = run(&cc, kind, Host::ElfX86_64MsAbi, &image, &ms_abi);
            assert_eq!(microsoft, system_v, "{kind:?}");
        }
    }
}
