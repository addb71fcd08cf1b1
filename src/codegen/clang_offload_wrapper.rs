//! The clang-offload-wrapper module as a native relocatable object: ELF x86-64 and AArch64,
//! COFF x86-64 (laid out as [`crate::codegen::layout`] says, the images copied in afterwards).
//!
//! What it holds, for images 0..K (names as the wrapper gives them):
//! - `.omp_offloading.device_image[.N]`: the image bytes (`.rodata`; `.rdata` on COFF);
//! - `.omp_offloading.device_images`: K `__tgt_device_image {ImageStart, ImageEnd,
//!   EntriesBegin, EntriesEnd}`, the entries being `__start_`/`__stop_omp_offloading_entries`;
//! - `.omp_offloading.descriptor`: `__tgt_bin_desc {K, images, entries begin, entries end}`;
//! - `.offload_image_info[.N]`: `__tgt_image_info {version 1, N, K, offload_arch,
//!   compile_opts (null)}`, and the target ID strings `__offload_arch[.N]` in
//!   `.offload_arch_list`;
//! - `__dummy.omp_offloading.entry`: a zero-size object in `omp_offloading_entries`, so that
//!   the linker defines the section's start and stop symbols;
//! - a constructor (priority 1) that calls `__tgt_register_image_info` for each image, when the
//!   runtime has it (a weak reference: upstream runtimes do not), then `__tgt_register_lib`;
//!   a destructor that calls `__tgt_unregister_lib`.
//!
//! On COFF, as clang compiles the module's IR for `x86_64-pc-windows-msvc`: the tables are in
//! `.rdata`, the constructor and destructor in `.CRT$XCA00001` and `.CRT$XTA00001`, and the
//! weak `__tgt_register_image_info` is read through `.refptr.__tgt_register_image_info`, a
//! pointer in a COMDAT section (the linker resolves a missing weak symbol to address 0, which
//! no 32-bit displacement from a DLL can reach).

use object::write::{Comdat, Object, SectionId, StandardSection, Symbol, SymbolId, SymbolSection};
use object::{ComdatKind, SectionKind, SymbolFlags, SymbolKind, SymbolScope};

use crate::codegen::layout::name;
use crate::codegen::layout::{
    add_format_symbols, add_function_pointer, add_images, add_section, add_stack_note,
    add_tables_section, define_functions, function_symbol, lay_out, local_symbol, pointer,
    runtime_function, undefined, Function, Host, Laid, Placed, Run,
};
use crate::codegen::{a64, x86};
use crate::error::Result;

const IMAGE_STRUCT: u64 = 32;
const DESCRIPTOR: u64 = 32;
const INFO_STRUCT: u64 = 32;

/// The wrapper as a relocatable object for `host`. The steps add sections, symbols and
/// relocations in the order clang-offload-wrapper's object has them, so the order of the calls
/// here is part of the output.
pub fn native_object(host: Host, images: &[u64], arches: &[&str]) -> Result<Laid> {
    let mut obj = host.object();
    add_format_symbols(&mut obj, host);
    let image_section = if host.is_coff() {
        add_section(&mut obj, host, ".rdata", SectionKind::ReadOnlyData)
    } else {
        obj.section_id(StandardSection::ReadOnlyData)
    };
    let device_images = add_images(&mut obj, image_section, 8, images, |i| {
        name(".omp_offloading.device_image", i)
    });
    let arch_list = add_arch_list(&mut obj, host, arches);
    let entries = add_entries(&mut obj, host);
    let mut tables = Tables::add(&mut obj, host, images.len());
    tables.add_device_image_table(&mut obj, &device_images, &entries)?;
    tables.add_descriptor(&mut obj, &entries)?;
    tables.add_image_infos(&mut obj, &arch_list)?;
    let (ctor, dtor) = add_registration(&mut obj, host, &tables)?;
    add_function_pointer(&mut obj, host, Run::AtStartup, 1, ctor)?;
    add_function_pointer(&mut obj, host, Run::AtExit, 1, dtor)?;
    add_stack_note(&mut obj, host);
    lay_out(&obj, host, &device_images)
}

/// The target ID strings, NUL-terminated, in `.offload_arch_list`, named `__offload_arch[.N]`.
fn add_arch_list(obj: &mut Object, host: Host, arches: &[&str]) -> Placed {
    let section = add_section(obj, host, ".offload_arch_list", SectionKind::ReadOnlyString);
    let mut placed = Placed {
        section,
        at: Vec::with_capacity(arches.len()),
        len: Vec::with_capacity(arches.len()),
        symbols: Vec::with_capacity(arches.len()),
    };
    for (i, arch) in arches.iter().enumerate() {
        let mut bytes = arch.as_bytes().to_vec();
        bytes.push(0);
        let at = obj.append_section_data(section, &bytes, 1);
        let len = bytes.len() as u64;
        let symbol = local_symbol(
            obj,
            &name("__offload_arch", i),
            section,
            at,
            len,
            SymbolKind::Data,
        );
        placed.at.push(at);
        placed.len.push(len);
        placed.symbols.push(symbol);
    }
    placed
}

/// The bounds of the offload entries table, which the linker defines.
struct Entries {
    start: SymbolId,
    stop: SymbolId,
}

/// The `omp_offloading_entries` section with its dummy (hidden on ELF), so that the linker
/// defines the section's `__start_` and `__stop_` symbols even when no entry is linked in.
fn add_entries(obj: &mut Object, host: Host) -> Entries {
    let section = add_section(
        obj,
        host,
        "omp_offloading_entries",
        SectionKind::ReadOnlyData,
    );
    obj.section_mut(section).append_data(&[], 8);
    obj.add_symbol(Symbol {
        name: b"__dummy.omp_offloading.entry".to_vec(),
        value: 0,
        size: 0,
        kind: SymbolKind::Data,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Section(section),
        flags: SymbolFlags::None,
    });
    let bound = |obj: &mut Object, name| {
        undefined(obj, name, SymbolKind::Data, SymbolScope::Linkage, false)
    };
    Entries {
        start: bound(obj, "__start_omp_offloading_entries"),
        stop: bound(obj, "__stop_omp_offloading_entries"),
    }
}

/// The runtime's tables, one block from `base` of `.data.rel.ro` (`.rdata` on COFF): K
/// `__tgt_device_image`, the `__tgt_bin_desc`, then K `__tgt_image_info`. Pointers in them
/// are absolute relocations.
struct Tables {
    host: Host,
    section: SectionId,
    base: u64,
    count: usize,
    /// `.omp_offloading.device_images`, set by [`Tables::add_descriptor`].
    table: Option<SymbolId>,
    /// `.omp_offloading.descriptor`, set by [`Tables::add_descriptor`].
    descriptor: Option<SymbolId>,
    /// `.offload_image_info[.N]`, set by [`Tables::add_image_infos`].
    infos: Vec<SymbolId>,
}

impl Tables {
    /// Adds the tables' section with room for the tables of `count` images, zero-filled.
    fn add(obj: &mut Object, host: Host, count: usize) -> Tables {
        let section = add_tables_section(obj, host);
        let size = IMAGE_STRUCT * count as u64 + DESCRIPTOR + INFO_STRUCT * count as u64;
        let base = obj.append_section_data(section, &vec![0; size as usize], 8);
        Tables {
            host,
            section,
            base,
            count,
            table: None,
            descriptor: None,
            infos: Vec::new(),
        }
    }

    /// Where the descriptor starts, from `base`.
    fn descriptor_at(&self) -> u64 {
        IMAGE_STRUCT * self.count as u64
    }

    /// Where image info `index` starts, from `base`.
    fn info_at(&self, index: usize) -> u64 {
        self.descriptor_at() + DESCRIPTOR + INFO_STRUCT * index as u64
    }

    /// A pointer at `at` (from `base`) to `symbol + addend`.
    fn pointer(&self, obj: &mut Object, at: u64, symbol: SymbolId, addend: i64) -> Result<()> {
        pointer(obj, self.host, self.section, self.base + at, symbol, addend)
    }

    /// A little-endian `u32` at `at` (from `base`).
    fn put_u32(&self, obj: &mut Object, at: u64, value: u32) {
        let o = (self.base + at) as usize;
        obj.section_mut(self.section).data_mut()[o..o + 4].copy_from_slice(&value.to_le_bytes());
    }

    /// The `__tgt_device_image` records: each image's start and end, and the entries' bounds.
    fn add_device_image_table(
        &self,
        obj: &mut Object,
        images: &Placed,
        entries: &Entries,
    ) -> Result<()> {
        for (i, (&symbol, &len)) in images.symbols.iter().zip(&images.len).enumerate() {
            let at = IMAGE_STRUCT * i as u64;
            self.pointer(obj, at, symbol, 0)?;
            self.pointer(obj, at + 8, symbol, len as i64)?;
            self.pointer(obj, at + 16, entries.start, 0)?;
            self.pointer(obj, at + 24, entries.stop, 0)?;
        }
        Ok(())
    }

    /// The `__tgt_bin_desc` {K, images, entries begin, entries end}, and the symbols that name
    /// the image table and the descriptor.
    fn add_descriptor(&mut self, obj: &mut Object, entries: &Entries) -> Result<()> {
        let descriptor = self.descriptor_at();
        let table = local_symbol(
            obj,
            ".omp_offloading.device_images",
            self.section,
            self.base,
            descriptor,
            SymbolKind::Data,
        );
        self.put_u32(obj, descriptor, self.count as u32);
        self.pointer(obj, descriptor + 8, table, 0)?;
        self.pointer(obj, descriptor + 16, entries.start, 0)?;
        self.pointer(obj, descriptor + 24, entries.stop, 0)?;
        self.table = Some(table);
        self.descriptor = Some(local_symbol(
            obj,
            ".omp_offloading.descriptor",
            self.section,
            self.base + descriptor,
            DESCRIPTOR,
            SymbolKind::Data,
        ));
        Ok(())
    }

    /// The `__tgt_image_info` records {version 1, N, K, offload_arch, compile_opts (null)}, one
    /// for each target ID string, each named `.offload_image_info[.N]`.
    fn add_image_infos(&mut self, obj: &mut Object, arch_list: &Placed) -> Result<()> {
        for (i, &arch) in arch_list.symbols.iter().enumerate() {
            let at = self.info_at(i);
            self.put_u32(obj, at, 1);
            self.put_u32(obj, at + 4, i as u32);
            self.put_u32(obj, at + 8, self.count as u32);
            self.pointer(obj, at + 16, arch, 0)?;
            let info = local_symbol(
                obj,
                &name(".offload_image_info", i),
                self.section,
                self.base + at,
                INFO_STRUCT,
                SymbolKind::Data,
            );
            self.infos.push(info);
        }
        Ok(())
    }
}

/// What the constructor and destructor refer to.
struct Code {
    descriptor: SymbolId,
    infos: Vec<SymbolId>,
    /// `__tgt_register_image_info` (ELF: read from the GOT), or on COFF the pointer to it.
    register_info: SymbolId,
    register: SymbolId,
    unregister: SymbolId,
}

/// The constructor and the destructor in `.text.startup`, with the runtime functions they call.
/// Returns their symbols.
fn add_registration(obj: &mut Object, host: Host, tables: &Tables) -> Result<(SymbolId, SymbolId)> {
    let text = add_section(obj, host, ".text.startup", SectionKind::Text);
    // Upstream runtimes have no __tgt_register_image_info: the constructor tests for it.
    let weak_info = undefined(
        obj,
        "__tgt_register_image_info",
        SymbolKind::Text,
        SymbolScope::Dynamic,
        true,
    );
    let register_info = if host.is_coff() {
        add_refptr(obj, host, weak_info)?
    } else {
        weak_info
    };
    let code = Code {
        descriptor: tables.descriptor.expect("the descriptor is added first"),
        infos: tables.infos.clone(),
        register_info,
        register: runtime_function(obj, "__tgt_register_lib"),
        unregister: runtime_function(obj, "__tgt_unregister_lib"),
    };
    let (ctor, dtor) = match x86::conventions(host) {
        Some((conv, format)) => code.x86_64(conv, format),
        None => code.aarch64(),
    };
    let ctor_sym = function_symbol(obj, text, ".omp_offloading.descriptor_reg");
    let dtor_sym = function_symbol(obj, text, ".omp_offloading.descriptor_unreg");
    define_functions(obj, host, text, vec![(ctor_sym, ctor), (dtor_sym, dtor)])?;
    Ok((ctor_sym, dtor_sym))
}

/// `.refptr.NAME`: a pointer to `symbol` in its own COMDAT section `.rdata$.refptr.NAME`, as
/// LLVM reads a weak symbol's address on COFF.
fn add_refptr(obj: &mut Object, host: Host, symbol: SymbolId) -> Result<SymbolId> {
    let name = String::from_utf8_lossy(&obj.symbol(symbol).name).into_owned();
    let section = add_section(
        obj,
        host,
        &format!(".rdata$.refptr.{name}"),
        SectionKind::ReadOnlyData,
    );
    obj.append_section_data(section, &[0; 8], 8);
    // A COMDAT section has its section symbol.
    obj.section_symbol(section);
    let refptr = obj.add_symbol(Symbol {
        name: format!(".refptr.{name}").into_bytes(),
        value: 0,
        size: 8,
        kind: SymbolKind::Data,
        scope: SymbolScope::Linkage,
        weak: false,
        section: SymbolSection::Section(section),
        flags: SymbolFlags::None,
    });
    obj.add_comdat(Comdat {
        kind: ComdatKind::Any,
        symbol: refptr,
        sections: vec![section],
    });
    pointer(obj, host, section, 0, symbol, 0)?;
    Ok(refptr)
}

impl Code {
    /// The constructor and the destructor for x86-64 with calling convention `conv`.
    fn x86_64(&self, conv: x86::Conv, format: x86::Format) -> (Function, Function) {
        use x86::{Cond, Reg};
        // The stack is 16-byte aligned at each call: 8 for the return address, 8 more here,
        // and the shadow space.
        let frame = 8 + conv.shadow();
        let arg = conv.first();
        let mut c = x86::Asm::new(format);
        c.sub_rsp(frame);
        for &info in &self.infos {
            let skip = c.label();
            match format {
                x86::Format::Elf => c.load_got(Reg::Rax, self.register_info),
                x86::Format::Coff => c.load_rip(Reg::Rax, self.register_info),
            }
            c.test(Reg::Rax);
            c.jump_if(Cond::Equal, skip);
            c.lea(arg, info, 0);
            c.call_reg(Reg::Rax);
            c.bind(skip);
        }
        c.lea(arg, self.descriptor, 0);
        c.call(self.register);
        c.add_rsp(frame);
        c.ret();
        let mut d = x86::Asm::new(format);
        d.sub_rsp(frame);
        d.lea(arg, self.descriptor, 0);
        d.call(self.unregister);
        d.add_rsp(frame);
        d.ret();
        (c.finish(), d.finish())
    }

    /// The constructor and the destructor for AArch64.
    fn aarch64(&self) -> (Function, Function) {
        use a64::{FP, LR, SP};
        const CALLEE: a64::X = 16;
        let mut c = a64::Asm::default();
        c.push_pair(FP, LR, 16);
        c.add_imm(FP, SP, 0);
        for &info in &self.infos {
            let skip = c.label();
            c.load_got(CALLEE, self.register_info);
            c.branch_if_zero(CALLEE, skip);
            c.address(0, info, 0);
            c.call_reg(CALLEE);
            c.bind(skip);
        }
        c.address(0, self.descriptor, 0);
        c.call(self.register);
        c.pop_pair(FP, LR, 16);
        c.ret();
        let mut d = a64::Asm::default();
        d.push_pair(FP, LR, 16);
        d.add_imm(FP, SP, 0);
        d.address(0, self.descriptor, 0);
        d.call(self.unregister);
        d.pop_pair(FP, LR, 16);
        d.ret();
        (c.finish(), d.finish())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::layout::{run_with_runtime, Image};
    use crate::ops::support::tool_path::reference_tool;
    use std::path::Path;

    /// The wrapper of `images` (in samples/dev) for `host`, run against the OpenMP stand-in
    /// runtime built with `defines`: what the program prints.
    fn run(cc: &Path, host: Host, images: &[&str], defines: &[&str]) -> String {
        let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/dev");
        let images: Vec<Image> = images
            .iter()
            .map(|i| Image::open(&samples.join(i)).unwrap())
            .collect();
        let lens: Vec<u64> = images.iter().map(Image::len).collect();
        let laid = native_object(host, &lens, &["gfx906", "gfx90a:xnack+"]).unwrap();
        run_with_runtime(cc, &laid, &images, "omp_runtime.c", defines)
    }

    /// The Microsoft x64 code of the COFF object, run on Linux in an ELF object against the
    /// stand-in runtime built with `ms_abi`, registers exactly what the System V code does,
    /// the weakly referenced `__tgt_register_image_info` included.
    #[test]
    fn microsoft_x64_code_registers_what_system_v_code_does() {
        let Some(cc) = reference_tool("clang-22") else {
            return;
        };
        let images = ["kernel-gfx906.hsaco", "kernel-gfx90a_xnack+.hsaco"];
        let system_v = run(&cc, Host::ElfX86_64, &images, &[]);
        assert!(system_v.contains("arch 'gfx90a:xnack+'"), "{system_v}");
        assert!(system_v.contains("register: 2 images"), "{system_v}");
        let ms_abi = ["-DRUNTIME_ABI=__attribute__((ms_abi))"];
        assert_eq!(run(&cc, Host::ElfX86_64MsAbi, &images, &ms_abi), system_v);
    }
}
