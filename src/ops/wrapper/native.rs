//! The clang-offload-wrapper module as a native relocatable ELF object.
//!
//! The native object is laid out before any image byte is read: the images are not held in
//! memory but copied from their files into place (by the kernel where it can), after the
//! object's headers, tables and code, so wrapping a 4 GiB image takes a few MiB.
//!
//! What it holds, for images 0..K (names as the wrapper gives them):
//! - `.omp_offloading.device_image[.N]`: the image bytes (`.rodata`);
//! - `.omp_offloading.device_images`: K `__tgt_device_image {ImageStart, ImageEnd,
//!   EntriesBegin, EntriesEnd}`, the entries being `__start_`/`__stop_omp_offloading_entries`;
//! - `.omp_offloading.descriptor`: `__tgt_bin_desc {K, images, entries begin, entries end}`;
//! - `.offload_image_info[.N]`: `__tgt_image_info {version 1, N, K, offload_arch,
//!   compile_opts (null)}`, and the target ID strings `__offload_arch[.N]` in
//!   `.offload_arch_list`;
//! - `__dummy.omp_offloading.entry`: a hidden zero-size object in `omp_offloading_entries`, so
//!   that the linker defines the section's start and stop symbols;
//! - a constructor (priority 1) that calls `__tgt_register_image_info` for each image, when the
//!   runtime has it (a weak reference: upstream runtimes do not), then `__tgt_register_lib`;
//!   a destructor that calls `__tgt_unregister_lib`.

use object::write::{
    Object, Relocation, SectionId, StandardSection, Symbol, SymbolId, SymbolSection,
};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationFlags, SectionFlags, SectionKind,
    SymbolFlags, SymbolKind, SymbolScope,
};

use super::{name, Image, Machine};
use crate::error::{Error, Result};
use crate::io::Output;

const IMAGE_STRUCT: u64 = 32;
const DESCRIPTOR: u64 = 32;
const INFO_STRUCT: u64 = 32;

/// A native object laid out without its images: the headers, tables and code, and where the
/// images go after them.
pub(super) struct Laid {
    /// Everything but the images; the image section's header already points past the end.
    head: Vec<u8>,
    /// Where the image section starts in the file.
    images_at: u64,
    /// Each image's offset in the image section, and its length.
    placed: Vec<(u64, u64)>,
}

impl Laid {
    /// The size of the whole object.
    pub(super) fn size(&self) -> u64 {
        self.placed
            .last()
            .map_or(self.head.len() as u64, |&(at, len)| {
                self.images_at + at + len
            })
    }

    /// Writes the object to `out`, copying `images` (in the order they were laid out) into
    /// place.
    pub(super) fn write(&self, out: &mut Output, images: &[Image]) -> Result<()> {
        out.write_bytes(&self.head)?;
        let mut written = self.head.len() as u64;
        for (image, &(at, len)) in images.iter().zip(&self.placed) {
            let start = self.images_at + at;
            write_zeros(out, start - written)?;
            match image {
                Image::File { file, .. } => out.write_file_range(file, 0, len)?,
                Image::Bytes(input) => out.write_bytes(input)?,
            }
            written = start + len;
        }
        Ok(())
    }
}

/// Writes `count` zero bytes (padding, less than a page).
fn write_zeros(out: &mut Output, count: u64) -> Result<()> {
    out.write_bytes(&vec![0; count as usize])
}

/// Where the image section starts when the images are large: on a page boundary after the rest
/// of the object, so that a file system that shares extents can share the images' with their
/// files. Small images follow the rest on an 8-byte boundary.
const IMAGES_ALIGN: u64 = 4096;

/// The images' size from which their section starts on a page boundary.
const PAGE_ALIGNED_FROM: u64 = 1 << 20;

pub(super) fn unsupported(triple: &str) -> Error {
    Error::msg(format!(
        "'{triple}': unsupported target triple (objects are written for x86_64 and aarch64; write .ll for others)"
    ))
}

/// The wrapper as a relocatable ELF object for `machine`. The steps add sections, symbols and
/// relocations in the order clang-offload-wrapper's object has them, so the order of the calls
/// here is part of the output.
pub(super) fn native_object(machine: Machine, images: &[u64], arches: &[&str]) -> Result<Laid> {
    let architecture = match machine {
        Machine::X86_64 => Architecture::X86_64,
        Machine::Aarch64 => Architecture::Aarch64,
    };
    let mut obj = Object::new(BinaryFormat::Elf, architecture, Endianness::Little);
    let device_images = add_device_images(&mut obj, images);
    let arch_list = add_arch_list(&mut obj, arches);
    let entries = add_entries(&mut obj);
    let tables = Tables::add(&mut obj, machine, images.len());
    let rodata_sym = obj.section_symbol(device_images.section);
    let arch_sym = obj.section_symbol(arch_list.section);
    tables.add_device_image_table(&mut obj, &device_images, rodata_sym, &entries)?;
    let table_sym = obj.section_symbol(tables.section);
    tables.add_descriptor(&mut obj, table_sym, &entries)?;
    tables.add_image_infos(&mut obj, &arch_list, arch_sym)?;
    let (ctor, dtor) = add_registration(&mut obj, machine, &tables, table_sym)?;
    add_init_fini(&mut obj, tables.abs64, ctor, dtor)?;
    add_stack_note(&mut obj);
    let head = obj.write().map_err(cannot_write)?;
    place_images(head, &device_images)
}

/// Points the (empty) image section of the written object `head` past its end, where the
/// images will be copied, and gives the layout.
fn place_images(mut head: Vec<u8>, images: &Placed) -> Result<Laid> {
    use object::read::elf::{ElfFile64, FileHeader};
    use object::{LittleEndian as LE, Object as _, ObjectSection as _};
    let size: u64 = images
        .at
        .last()
        .zip(images.len.last())
        .map_or(0, |(at, len)| at + len);
    let align = if size >= PAGE_ALIGNED_FROM {
        IMAGES_ALIGN
    } else {
        8
    };
    let images_at = (head.len() as u64).next_multiple_of(align);
    let (header_at, entry) = {
        let file = ElfFile64::<LE>::parse(&*head)
            .map_err(|e| Error::msg(format!("cannot read back the wrapper object: {e}")))?;
        let section = file
            .section_by_name(".rodata")
            .ok_or_else(|| Error::msg("the wrapper object has no .rodata"))?;
        let header = file.elf_header();
        (
            header.e_shoff(LE) + section.index().0 as u64 * u64::from(header.e_shentsize(LE)),
            u64::from(header.e_shentsize(LE)),
        )
    };
    debug_assert_eq!(entry, 64);
    // sh_offset and sh_size of an Elf64_Shdr.
    let at = header_at as usize;
    head[at + 24..at + 32].copy_from_slice(&images_at.to_le_bytes());
    head[at + 32..at + 40].copy_from_slice(&size.to_le_bytes());
    Ok(Laid {
        head,
        images_at,
        placed: images
            .at
            .iter()
            .copied()
            .zip(images.len.iter().copied())
            .collect(),
    })
}

/// The error for a failure of the object writer.
fn cannot_write(e: object::write::Error) -> Error {
    Error::msg(format!("cannot write the wrapper: {e}"))
}

/// Pieces placed one after another in one section: where each starts and how long it is.
struct Placed {
    section: SectionId,
    at: Vec<u64>,
    len: Vec<u64>,
}

/// The images in `.rodata`, each on an 8-byte boundary, named `.omp_offloading.device_image[.N]`:
/// only their places and symbols, the section left empty (the images are copied in later).
fn add_device_images(obj: &mut Object, images: &[u64]) -> Placed {
    let section = obj.section_id(StandardSection::ReadOnlyData);
    obj.append_section_data(section, &[], 8);
    let mut end = 0u64;
    let mut placed = Placed {
        section,
        at: Vec::with_capacity(images.len()),
        len: Vec::with_capacity(images.len()),
    };
    for (i, &len) in images.iter().enumerate() {
        let at = end.next_multiple_of(8);
        end = at + len;
        local_symbol(
            obj,
            &name(".omp_offloading.device_image", i),
            section,
            at,
            len,
            SymbolKind::Data,
        );
        placed.at.push(at);
        placed.len.push(len);
    }
    placed
}

/// The target ID strings, NUL-terminated, in `.offload_arch_list`, named `__offload_arch[.N]`.
fn add_arch_list(obj: &mut Object, arches: &[&str]) -> Placed {
    let section = obj.add_section(
        Vec::new(),
        b".offload_arch_list".to_vec(),
        SectionKind::ReadOnlyString,
    );
    let mut placed = Placed {
        section,
        at: Vec::with_capacity(arches.len()),
        len: Vec::with_capacity(arches.len()),
    };
    for (i, arch) in arches.iter().enumerate() {
        let mut bytes = arch.as_bytes().to_vec();
        bytes.push(0);
        let at = obj.append_section_data(section, &bytes, 1);
        let len = bytes.len() as u64;
        local_symbol(
            obj,
            &name("__offload_arch", i),
            section,
            at,
            len,
            SymbolKind::Data,
        );
        placed.at.push(at);
        placed.len.push(len);
    }
    placed
}

/// The bounds of the offload entries table, which the linker defines.
struct Entries {
    start: SymbolId,
    stop: SymbolId,
}

/// The `omp_offloading_entries` section with its hidden dummy, so that the linker defines the
/// section's `__start_` and `__stop_` symbols even when no entry is linked in.
fn add_entries(obj: &mut Object) -> Entries {
    let section = obj.add_section(
        Vec::new(),
        b"omp_offloading_entries".to_vec(),
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

/// The runtime's tables in `.data.rel.ro`, one block from `base`: K `__tgt_device_image`, the
/// `__tgt_bin_desc`, then K `__tgt_image_info`. Pointers in them are absolute relocations.
struct Tables {
    section: SectionId,
    base: u64,
    count: usize,
    abs64: object::elf::RelocationType,
}

impl Tables {
    /// Adds `.data.rel.ro` with room for the tables of `count` images, zero-filled.
    fn add(obj: &mut Object, machine: Machine, count: usize) -> Tables {
        let section = obj.add_section(
            Vec::new(),
            b".data.rel.ro".to_vec(),
            SectionKind::ReadOnlyDataWithRel,
        );
        let size = IMAGE_STRUCT * count as u64 + DESCRIPTOR + INFO_STRUCT * count as u64;
        let base = obj.append_section_data(section, &vec![0; size as usize], 8);
        let abs64 = match machine {
            Machine::X86_64 => object::elf::R_X86_64_64,
            Machine::Aarch64 => object::elf::R_AARCH64_ABS64,
        };
        Tables {
            section,
            base,
            count,
            abs64,
        }
    }

    /// Where the descriptor starts, from `base`.
    fn descriptor(&self) -> u64 {
        IMAGE_STRUCT * self.count as u64
    }

    /// Where image info `index` starts, from `base`.
    fn info(&self, index: usize) -> u64 {
        self.descriptor() + DESCRIPTOR + INFO_STRUCT * index as u64
    }

    /// A pointer at `at` (from `base`) to `symbol + addend`.
    fn pointer(&self, obj: &mut Object, at: u64, symbol: SymbolId, addend: i64) -> Result<()> {
        obj.add_relocation(
            self.section,
            Relocation {
                offset: self.base + at,
                symbol,
                addend,
                flags: RelocationFlags::Elf { r_type: self.abs64 },
            },
        )
        .map_err(cannot_write)
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
        rodata_sym: SymbolId,
        entries: &Entries,
    ) -> Result<()> {
        for (i, (&start, &len)) in images.at.iter().zip(&images.len).enumerate() {
            let at = IMAGE_STRUCT * i as u64;
            self.pointer(obj, at, rodata_sym, start as i64)?;
            self.pointer(obj, at + 8, rodata_sym, (start + len) as i64)?;
            self.pointer(obj, at + 16, entries.start, 0)?;
            self.pointer(obj, at + 24, entries.stop, 0)?;
        }
        Ok(())
    }

    /// The `__tgt_bin_desc` {K, images, entries begin, entries end}, and the symbols that name
    /// the image table and the descriptor.
    fn add_descriptor(
        &self,
        obj: &mut Object,
        table_sym: SymbolId,
        entries: &Entries,
    ) -> Result<()> {
        let descriptor = self.descriptor();
        self.put_u32(obj, descriptor, self.count as u32);
        self.pointer(obj, descriptor + 8, table_sym, self.base as i64)?;
        self.pointer(obj, descriptor + 16, entries.start, 0)?;
        self.pointer(obj, descriptor + 24, entries.stop, 0)?;
        local_symbol(
            obj,
            ".omp_offloading.device_images",
            self.section,
            self.base,
            descriptor,
            SymbolKind::Data,
        );
        local_symbol(
            obj,
            ".omp_offloading.descriptor",
            self.section,
            self.base + descriptor,
            DESCRIPTOR,
            SymbolKind::Data,
        );
        Ok(())
    }

    /// The `__tgt_image_info` records {version 1, N, K, offload_arch, compile_opts (null)}, one
    /// for each target ID string, each named `.offload_image_info[.N]`.
    fn add_image_infos(
        &self,
        obj: &mut Object,
        arch_list: &Placed,
        arch_sym: SymbolId,
    ) -> Result<()> {
        for (i, &arch) in arch_list.at.iter().enumerate() {
            let at = self.info(i);
            self.put_u32(obj, at, 1);
            self.put_u32(obj, at + 4, i as u32);
            self.put_u32(obj, at + 8, self.count as u32);
            self.pointer(obj, at + 16, arch_sym, arch as i64)?;
            local_symbol(
                obj,
                &name(".offload_image_info", i),
                self.section,
                self.base + at,
                INFO_STRUCT,
                SymbolKind::Data,
            );
        }
        Ok(())
    }
}

/// The constructor and the destructor in `.text.startup`, with the runtime functions they call.
/// Returns their symbols.
fn add_registration(
    obj: &mut Object,
    machine: Machine,
    tables: &Tables,
    table_sym: SymbolId,
) -> Result<(SymbolId, SymbolId)> {
    let runtime = |obj: &mut Object, name, weak| {
        undefined(obj, name, SymbolKind::Text, SymbolScope::Dynamic, weak)
    };
    // Upstream runtimes have no __tgt_register_image_info: the constructor tests for it.
    let register_info = runtime(obj, "__tgt_register_image_info", true);
    let register = runtime(obj, "__tgt_register_lib", false);
    let unregister = runtime(obj, "__tgt_unregister_lib", false);
    let text = obj.add_section(Vec::new(), b".text.startup".to_vec(), SectionKind::Text);
    let code = Code {
        data: table_sym,
        descriptor: tables.base + tables.descriptor(),
        infos: (0..tables.count)
            .map(|i| tables.base + tables.info(i))
            .collect(),
        register_info,
        register,
        unregister,
    };
    let ((ctor, ctor_relocs), (dtor, dtor_relocs)) = match machine {
        Machine::X86_64 => code.x86_64(),
        Machine::Aarch64 => code.aarch64(),
    };
    let ctor_at = obj.append_section_data(text, &ctor, 16);
    let dtor_at = obj.append_section_data(text, &dtor, 16);
    for (at, relocs) in [(ctor_at, ctor_relocs), (dtor_at, dtor_relocs)] {
        for mut r in relocs {
            r.offset += at;
            obj.add_relocation(text, r).map_err(cannot_write)?;
        }
    }
    let ctor_sym = local_symbol(
        obj,
        ".omp_offloading.descriptor_reg",
        text,
        ctor_at,
        ctor.len() as u64,
        SymbolKind::Text,
    );
    let dtor_sym = local_symbol(
        obj,
        ".omp_offloading.descriptor_unreg",
        text,
        dtor_at,
        dtor.len() as u64,
        SymbolKind::Text,
    );
    Ok((ctor_sym, dtor_sym))
}

/// `.init_array.1` and `.fini_array.1`: the constructor and the destructor at priority 1.
fn add_init_fini(
    obj: &mut Object,
    abs64: object::elf::RelocationType,
    ctor: SymbolId,
    dtor: SymbolId,
) -> Result<()> {
    for (section_name, sh_type, function) in [
        (".init_array.1", object::elf::SHT_INIT_ARRAY, ctor),
        (".fini_array.1", object::elf::SHT_FINI_ARRAY, dtor),
    ] {
        let id = obj.add_section(
            Vec::new(),
            section_name.as_bytes().to_vec(),
            SectionKind::Data,
        );
        obj.section_mut(id).flags = SectionFlags::Elf {
            sh_type,
            sh_flags: object::elf::SectionFlags(
                object::elf::SHF_ALLOC.0 | object::elf::SHF_WRITE.0,
            ),
        };
        let at = obj.append_section_data(id, &[0; 8], 8);
        obj.add_relocation(id, reloc(at, function, 0, abs64))
            .map_err(cannot_write)?;
    }
    Ok(())
}

/// `.note.GNU-stack`, empty: the object needs no executable stack.
fn add_stack_note(obj: &mut Object) {
    let stack = obj.add_section(Vec::new(), b".note.GNU-stack".to_vec(), SectionKind::Other);
    obj.section_mut(stack).flags = SectionFlags::Elf {
        sh_type: object::elf::SHT_PROGBITS,
        sh_flags: object::elf::SectionFlags(0),
    };
}

fn local_symbol(
    obj: &mut Object,
    name: &str,
    section: SectionId,
    value: u64,
    size: u64,
    kind: SymbolKind,
) -> SymbolId {
    obj.add_symbol(Symbol {
        name: name.as_bytes().to_vec(),
        value,
        size,
        kind,
        scope: SymbolScope::Compilation,
        weak: false,
        section: SymbolSection::Section(section),
        flags: SymbolFlags::None,
    })
}

fn undefined(
    obj: &mut Object,
    name: &str,
    kind: SymbolKind,
    scope: SymbolScope,
    weak: bool,
) -> SymbolId {
    obj.add_symbol(Symbol {
        name: name.as_bytes().to_vec(),
        value: 0,
        size: 0,
        kind,
        scope,
        weak,
        section: SymbolSection::Undefined,
        flags: SymbolFlags::None,
    })
}

/// What the constructor and destructor refer to.
struct Code {
    data: SymbolId,
    descriptor: u64,
    infos: Vec<u64>,
    register_info: SymbolId,
    register: SymbolId,
    unregister: SymbolId,
}

/// A function's code and its relocations (offsets from the function's start).
type Function = (Vec<u8>, Vec<Relocation>);

fn reloc(
    offset: u64,
    symbol: SymbolId,
    addend: i64,
    r_type: object::elf::RelocationType,
) -> Relocation {
    Relocation {
        offset,
        symbol,
        addend,
        flags: RelocationFlags::Elf { r_type },
    }
}

impl Code {
    /// The constructor and the destructor for x86-64.
    fn x86_64(&self) -> (Function, Function) {
        use object::elf::{R_X86_64_PC32, R_X86_64_PLT32, R_X86_64_REX_GOTPCRELX};
        let mut c = vec![0x48, 0x83, 0xec, 0x08]; // sub rsp, 8
        let mut r = Vec::new();
        for &info in &self.infos {
            // mov rax, [rip + __tgt_register_image_info@GOTPCREL]; test rax, rax; je +9
            c.extend_from_slice(&[0x48, 0x8b, 0x05]);
            r.push(reloc(
                c.len() as u64,
                self.register_info,
                -4,
                R_X86_64_REX_GOTPCRELX,
            ));
            c.extend_from_slice(&[0; 4]);
            c.extend_from_slice(&[0x48, 0x85, 0xc0, 0x74, 0x09]);
            // lea rdi, [rip + info]; call rax
            c.extend_from_slice(&[0x48, 0x8d, 0x3d]);
            r.push(reloc(
                c.len() as u64,
                self.data,
                info as i64 - 4,
                R_X86_64_PC32,
            ));
            c.extend_from_slice(&[0; 4]);
            c.extend_from_slice(&[0xff, 0xd0]);
        }
        let tail = |c: &mut Vec<u8>, r: &mut Vec<Relocation>, target| {
            // lea rdi, [rip + descriptor]; call target@PLT; add rsp, 8; ret
            c.extend_from_slice(&[0x48, 0x8d, 0x3d]);
            r.push(reloc(
                c.len() as u64,
                self.data,
                self.descriptor as i64 - 4,
                R_X86_64_PC32,
            ));
            c.extend_from_slice(&[0; 4]);
            c.push(0xe8);
            r.push(reloc(c.len() as u64, target, -4, R_X86_64_PLT32));
            c.extend_from_slice(&[0; 4]);
            c.extend_from_slice(&[0x48, 0x83, 0xc4, 0x08, 0xc3]);
        };
        tail(&mut c, &mut r, self.register);
        let (mut d, mut dr) = (vec![0x48, 0x83, 0xec, 0x08], Vec::new());
        tail(&mut d, &mut dr, self.unregister);
        ((c, r), (d, dr))
    }

    /// The constructor and the destructor for AArch64.
    fn aarch64(&self) -> (Function, Function) {
        use object::elf::{
            R_AARCH64_ADD_ABS_LO12_NC, R_AARCH64_ADR_GOT_PAGE, R_AARCH64_ADR_PREL_PG_HI21,
            R_AARCH64_CALL26, R_AARCH64_LD64_GOT_LO12_NC,
        };
        let word = |c: &mut Vec<u8>, w: u32| c.extend_from_slice(&w.to_le_bytes());
        let prologue = |c: &mut Vec<u8>| {
            word(c, 0xa9bf_7bfd); // stp x29, x30, [sp, #-16]!
            word(c, 0x9100_03fd); // mov x29, sp
        };
        let address = |c: &mut Vec<u8>, r: &mut Vec<Relocation>, at: u64| {
            r.push(reloc(
                c.len() as u64,
                self.data,
                at as i64,
                R_AARCH64_ADR_PREL_PG_HI21,
            ));
            word(c, 0x9000_0000); // adrp x0, target
            r.push(reloc(
                c.len() as u64,
                self.data,
                at as i64,
                R_AARCH64_ADD_ABS_LO12_NC,
            ));
            word(c, 0x9100_0000); // add x0, x0, :lo12:target
        };
        let epilogue = |c: &mut Vec<u8>| {
            word(c, 0xa8c1_7bfd); // ldp x29, x30, [sp], #16
            word(c, 0xd65f_03c0); // ret
        };
        let (mut c, mut r) = (Vec::new(), Vec::new());
        prologue(&mut c);
        for &info in &self.infos {
            r.push(reloc(
                c.len() as u64,
                self.register_info,
                0,
                R_AARCH64_ADR_GOT_PAGE,
            ));
            word(&mut c, 0x9000_0010); // adrp x16, :got:__tgt_register_image_info
            r.push(reloc(
                c.len() as u64,
                self.register_info,
                0,
                R_AARCH64_LD64_GOT_LO12_NC,
            ));
            word(&mut c, 0xf940_0210); // ldr x16, [x16, :got_lo12:...]
            word(&mut c, 0xb400_0090); // cbz x16, +16
            address(&mut c, &mut r, info);
            word(&mut c, 0xd63f_0200); // blr x16
        }
        address(&mut c, &mut r, self.descriptor);
        r.push(reloc(c.len() as u64, self.register, 0, R_AARCH64_CALL26));
        word(&mut c, 0x9400_0000); // bl __tgt_register_lib
        epilogue(&mut c);
        let (mut d, mut dr) = (Vec::new(), Vec::new());
        prologue(&mut d);
        address(&mut d, &mut dr, self.descriptor);
        dr.push(reloc(d.len() as u64, self.unregister, 0, R_AARCH64_CALL26));
        word(&mut d, 0x9400_0000); // bl __tgt_unregister_lib
        epilogue(&mut d);
        ((c, r), (d, dr))
    }
}
