//! Bare device images: device code in no container, told by its content, not its name.
//!
//! | kind          | told by                                                  | target                        |
//! |---------------|----------------------------------------------------------|-------------------------------|
//! | AMDGPU code object | ELF, `EM_AMDGPU`, OS ABI HSA, code object v3+ (see [`CodeObject`]) | processor and features in `e_flags` |
//! | CUDA cubin    | ELF, `EM_CUDA` (190)                                     | SM in `e_flags`               |
//! | PTX           | text: comments, then `.version X.Y`, then `.target sm_XX` | the `.target` SM (`compute_XX`) |
//! | SPIR-V        | magic `0x07230203` and a version word                    | none (the addressing model gives the triple) |
//! | LLVM bitcode  | magic `BC 0xC0DE` (or its wrapper), an IR symbol table whose triple is a device's (`amdgcn`, `nvptx`, `spir`) | its functions' `target-cpu` (and AMDGPU's `sramecc`/`xnack` from `target-features`), if any |
//!
//! A cubin's SM is in bits 8-15 of `e_flags` in the ABI NVIDIA's tools write since CUDA 12.8
//! (`EI_ABIVERSION` 8 and later; bit 3 marks an arch-specific `a` SM), in bits 0-7 before
//! (bit 11 marks `sm_90a`). nvcc 13.5 leaves those bits clear and says `a` in the cubin's
//! `.nv.compat` section instead (attribute 9), where cuobjdump reads it; a family cubin
//! (`sm_100f`) says only its SM, and cuobjdump names it so too.
//!
//! Each image ends where its format says: an ELF file at the end of its section header table,
//! PTX at its terminating NUL (or the end of the data), raw bitcode after its last top-level
//! block, wrapped bitcode where its wrapper says, SPIR-V after its last instruction whose word
//! count holds.

use object::elf::FileHeader64;
use object::LittleEndian as Le;

use crate::format::code_object::{elf_extent, CodeObject};
use crate::llvm::bitcode::attributes;
use crate::llvm::bitcode::reader as bitcode;

/// The ELF machine of CUDA cubins.
pub const EM_CUDA: u16 = 190;

/// The magic of SPIR-V, `0x07230203`, as a little-endian module stores it.
pub const SPIRV_MAGIC: &[u8] = &[0x03, 0x02, 0x23, 0x07];

/// The directive every PTX module starts with, after its comments.
pub const PTX_MAGIC: &[u8] = b".version";

/// How far before its `.version` directive the comments of embedded PTX are looked for.
const PTX_HEAD_LIMIT: usize = 64 << 10;

/// What a bare device image is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BareKind {
    /// An AMDGPU code object (`.co`, `.hsaco`).
    CodeObject,
    /// A CUDA cubin (`.cubin`).
    Cubin,
    /// PTX text (`.ptx`).
    Ptx,
    /// A SPIR-V module (`.spv`).
    Spirv,
    /// Device LLVM bitcode (`.bc`).
    Bitcode,
}

impl BareKind {
    /// Every kind.
    pub const ALL: [BareKind; 5] = [
        BareKind::CodeObject,
        BareKind::Cubin,
        BareKind::Ptx,
        BareKind::Spirv,
        BareKind::Bitcode,
    ];

    /// The name `ls` prints in its producer column.
    pub fn name(self) -> &'static str {
        match self {
            BareKind::CodeObject => "code-object",
            BareKind::Cubin => "cubin",
            BareKind::Ptx => "ptx",
            BareKind::Spirv => "spirv",
            BareKind::Bitcode => "bitcode",
        }
    }

    /// The kind a producer name denotes.
    pub fn from_name(name: &str) -> Option<BareKind> {
        BareKind::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// Whether a runtime loads an image of this kind as it is, as a module (`hipModuleLoad`
    /// of a code object, `cuModuleLoad` of a cubin or PTX).
    pub fn is_module(self) -> bool {
        matches!(self, BareKind::CodeObject | BareKind::Cubin | BareKind::Ptx)
    }

    /// What the image holds, as `ls` names it in its kind column (and extract in its file
    /// names): `o`, `cubin`, `ptx`, `spv`, `bc`.
    pub fn image_kind(self) -> &'static str {
        match self {
            BareKind::CodeObject => "o",
            BareKind::Cubin => "cubin",
            BareKind::Ptx => "ptx",
            BareKind::Spirv => "spv",
            BareKind::Bitcode => "bc",
        }
    }
}

/// A bare device image at the start of some data, borrowing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BareImage<'a> {
    /// What it is.
    pub kind: BareKind,
    /// Its bytes, to where its format says it ends.
    pub bytes: &'a [u8],
    /// Its target triple (`amdgcn-amd-amdhsa`, `nvptx64-nvidia-cuda`, `spirv64`).
    pub triple: String,
    /// Its target ID (`gfx90a:xnack+`, `sm_80`, `compute_90`); empty when it names none
    /// (SPIR-V, bitcode).
    pub target_id: String,
}

impl<'a> BareImage<'a> {
    /// The bare device image `data` starts with, if any.
    pub fn parse(data: &'a [u8]) -> Option<BareImage<'a>> {
        if data.starts_with(b"\x7fELF") {
            return code_object(data).or_else(|| cubin(data));
        }
        if data.starts_with(SPIRV_MAGIC) {
            return spirv(data);
        }
        if bitcode::is_bitcode(data) {
            return device_bitcode(data);
        }
        ptx(data, 0)
    }

    /// The PTX module whose `.version` directive starts at `at` in `data`: it starts after
    /// the NUL or other byte no text holds before it, when only comments and blank lines lie
    /// between; else at the directive's line, which must hold nothing before it.
    pub fn ptx_around(data: &'a [u8], at: usize) -> Option<BareImage<'a>> {
        // Comments before the directive are looked for this far back at most: a search that
        // meets `.version` again and again in text reads each stretch of it a bounded number
        // of times.
        let before = data.get(at.saturating_sub(PTX_HEAD_LIMIT)..at)?;
        let base = at - before.len();
        // Where the text starts: after the last byte no text holds, or at the start of the
        // data; not known when the window holds text alone and the data goes further back.
        let text_start = match before.iter().rposition(|&b| !is_text(b)) {
            Some(p) => Some(p + 1),
            None => (base == 0).then_some(0),
        };
        let start = if let Some(start) =
            text_start.filter(|&s| before.get(s..).is_some_and(only_comments))
        {
            start
        } else {
            // Else the directive starts its line (after white space), or it is no PTX.
            let line = before
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
            if !before.get(line..)?.iter().all(u8::is_ascii_whitespace) {
                return None;
            }
            line
        };
        ptx(data.get(base + start..)?, before.len() - start)
    }
}

fn code_object(data: &[u8]) -> Option<BareImage<'_>> {
    let code = CodeObject::parse(data)?;
    Some(BareImage {
        kind: BareKind::CodeObject,
        bytes: code.bytes,
        triple: "amdgcn-amd-amdhsa".into(),
        target_id: code.target_id,
    })
}

/// A 64-bit little-endian ELF file of machine `EM_CUDA`, its SM from `e_flags`.
fn cubin(data: &[u8]) -> Option<BareImage<'_>> {
    let (header, _) = object::pod::from_bytes::<FileHeader64<Le>>(data).ok()?;
    let ident = &header.e_ident;
    if ident.class != object::elf::ELFCLASS64
        || ident.data != object::elf::ELFDATA2LSB
        || header.e_machine.get(Le).0 != EM_CUDA
    {
        return None;
    }
    let flags = header.e_flags.get(Le).0;
    let (sm, specific) = if ident.abi_version >= 8 {
        ((flags >> 8) & 0xff, flags & 0x8 != 0)
    } else {
        (flags & 0xff, flags & 0x800 != 0)
    };
    if sm < 10 {
        return None;
    }
    let bytes = elf_extent(data, header)?;
    let suffix = if specific || compat_arch_specific(bytes) {
        "a"
    } else {
        ""
    };
    Some(BareImage {
        kind: BareKind::Cubin,
        bytes,
        triple: crate::format::cuda_fatbin::TRIPLE.into(),
        target_id: format!("sm_{sm}{suffix}"),
    })
}

/// Whether the cubin `bytes` says in its `.nv.compat` section that it runs on its SM alone
/// (`sm_90a`, `sm_100a`): nvcc 13 writes the `a` there, not in `e_flags`. The section is a
/// list of records, each a format byte, an attribute byte and a value: formats 1 to 3 take 4
/// bytes in all, format 4 a 16-bit size and that many bytes after it. Attribute 9 with value
/// 1 marks an arch-specific cubin (as cuobjdump reads it).
fn compat_arch_specific(bytes: &[u8]) -> bool {
    use object::{Object, ObjectSection};
    let Ok(elf) = object::read::elf::ElfFile64::<Le>::parse(bytes) else {
        return false;
    };
    let Some(records) = elf
        .section_by_name(".nv.compat")
        .and_then(|s| s.data().ok())
    else {
        return false;
    };
    let mut at = 0;
    while let Some(&[format, attribute, value, high]) = records.get(at..at + 4) {
        match format {
            1..=3 if attribute == 9 => return value == 1,
            1..=3 => at += 4,
            4 => at += 4 + usize::from(u16::from_le_bytes([value, high])),
            _ => return false,
        }
    }
    false
}

/// A SPIR-V module: its magic, a version word `0x00MMmm00` of 1.0 to 1.6, a bound, a zero
/// schema, then instructions as long as their word counts hold; the addressing model of its
/// `OpMemoryModel` gives the triple.
fn spirv(data: &[u8]) -> Option<BareImage<'_>> {
    let word = |i: usize| {
        data.get(4 * i..4 * i + 4)
            .and_then(|w| w.try_into().ok())
            .map(u32::from_le_bytes)
    };
    let version = word(1)?;
    if version & 0xff00_00ff != 0
        || !(0x0001_0000..=0x0001_0600).contains(&version)
        || word(4)? != 0
    {
        return None;
    }
    let mut at = 5;
    let mut triple = "spirv";
    while let Some(instruction) = word(at) {
        let (count, opcode) = ((instruction >> 16) as usize, instruction & 0xffff);
        if count == 0 || word(at + count - 1).is_none() {
            break;
        }
        // OpMemoryModel: its first operand is the addressing model.
        if opcode == 14 {
            triple = match word(at + 1) {
                Some(1) => "spirv32",
                Some(2) => "spirv64",
                _ => "spirv",
            };
        }
        at += count;
    }
    if at == 5 {
        return None;
    }
    Some(BareImage {
        kind: BareKind::Spirv,
        bytes: data.get(..4 * at)?,
        triple: triple.into(),
        target_id: String::new(),
    })
}

/// Bitcode whose IR symbol table names a device's triple.
fn device_bitcode(data: &[u8]) -> Option<BareImage<'_>> {
    let bytes = data.get(..bitcode::extent(data)?)?;
    let symtab = bitcode::IrSymtab::parse(bytes).ok()?;
    let triple = String::from_utf8_lossy(symtab.target_triple().ok()?).into_owned();
    let device = ["amdgcn", "nvptx", "spir", "r600"]
        .iter()
        .any(|arch| triple.starts_with(arch));
    if !device {
        return None;
    }
    let target_id = bitcode_target_id(bytes, &triple).unwrap_or_default();
    Some(BareImage {
        kind: BareKind::Bitcode,
        bytes,
        triple,
        target_id,
    })
}

/// The target ID device bitcode was compiled for, from its functions' attributes: the
/// processor of `"target-cpu"` (`gfx90a`, `sm_80`) and, for AMDGPU, `sramecc` and `xnack`
/// as `"target-features"` sets them (`gfx90a:xnack+`). `None` when no function names a
/// processor (device libraries built for every processor) or the name is no plain word.
fn bitcode_target_id(bytes: &[u8], triple: &str) -> Option<String> {
    let strings = attributes::function_string_attributes(bytes, b"target-cpu")?;
    let value = |key: &[u8]| {
        strings
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_slice())
    };
    let cpu = value(b"target-cpu")?;
    let plain = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-');
    if cpu.is_empty() || cpu.len() > 32 || !cpu.iter().all(plain) {
        return None;
    }
    let mut id = String::from_utf8(cpu.to_vec()).ok()?;
    if triple.starts_with("amdgcn") {
        let features = value(b"target-features").unwrap_or_default();
        for feature in ["sramecc", "xnack"] {
            for sign in ['+', '-'] {
                let set = features
                    .split(|&b| b == b',')
                    .any(|f| f.split_first() == Some((&(sign as u8), feature.as_bytes())));
                if set {
                    id.push_str(&format!(":{feature}{sign}"));
                }
            }
        }
    }
    Some(id)
}

/// PTX text whose `.version` directive is at `at` (0: after the comments it starts with):
/// `.version X.Y` then `.target sm_XX`, up to its NUL.
fn ptx(data: &[u8], at: usize) -> Option<BareImage<'_>> {
    let rest = if at == 0 {
        skip_comments(data)
    } else {
        data.get(at..)?
    };
    let rest = rest.strip_prefix(PTX_MAGIC)?;
    let rest = skip_blanks(rest)?;
    let digits = rest
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.')
        .count();
    if digits == 0 {
        return None;
    }
    let rest = skip_comments(rest.get(digits..)?).strip_prefix(b".target")?;
    let rest = skip_blanks(rest)?.strip_prefix(b"sm_")?;
    let name: Vec<u8> = rest
        .iter()
        .copied()
        .take_while(u8::is_ascii_alphanumeric)
        .collect();
    let sm = std::str::from_utf8(&name).ok()?;
    let number = sm.trim_end_matches(['a', 'f']);
    if number.is_empty()
        || !number.bytes().all(|b| b.is_ascii_digit())
        || sm.len() > number.len() + 1
    {
        return None;
    }
    // `.address_size` follows `.target`, if it is there at all.
    let head = rest.get(..rest.len().min(256))?;
    let address_64 = head.windows(16).any(|w| w == b".address_size 64");
    let end = memchr::memchr(0, data).unwrap_or(data.len());
    Some(BareImage {
        kind: BareKind::Ptx,
        bytes: data.get(..end)?,
        triple: if address_64 {
            crate::format::cuda_fatbin::TRIPLE.into()
        } else {
            "nvptx-nvidia-cuda".into()
        },
        target_id: format!("compute_{sm}"),
    })
}

/// Whether `b` is a byte PTX text holds: printable ASCII, tab, line feed, carriage return.
fn is_text(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7e)
}

/// `text` without the blank lines, white space and `//` comments it starts with.
fn skip_comments(mut text: &[u8]) -> &[u8] {
    loop {
        let trimmed = text.trim_ascii_start();
        match trimmed.strip_prefix(b"//") {
            Some(comment) => {
                text = comment
                    .iter()
                    .position(|&b| b == b'\n')
                    .and_then(|p| comment.get(p..))
                    .unwrap_or_default();
            }
            None => return trimmed,
        }
    }
}

/// Whether `text` holds only white space and `//` comments.
fn only_comments(text: &[u8]) -> bool {
    skip_comments(text).is_empty()
}

/// `text` after the spaces and tabs it starts with, which must be at least one.
fn skip_blanks(text: &[u8]) -> Option<&[u8]> {
    let blanks = text
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count();
    text.get(blanks..).filter(|_| blanks > 0)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn sample(path: &str) -> Vec<u8> {
        std::fs::read(format!("{}/samples/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn cubins_are_told_by_their_header_and_name_their_sm() {
        for (path, sm) in [
            ("cuda/extracted/gencode/gencode.1.sm_80.cubin", "sm_80"),
            ("cuda/extracted/gencode/gencode.2.sm_90.cubin", "sm_90"),
            (
                "cuda/extracted/arch-specific/arch-specific.3.sm_120.cubin",
                "sm_120",
            ),
            ("cuda/extracted/rdc/rdc.1.sm_80.cubin", "sm_80"),
        ] {
            let bytes = sample(path);
            let found = BareImage::parse(&bytes).unwrap();
            assert_eq!(
                (found.kind, found.target_id.as_str(), found.bytes.len()),
                (BareKind::Cubin, sm, bytes.len()),
                "{path}"
            );
            assert_eq!(found.triple, "nvptx64-nvidia-cuda");
        }
        // The older ABI: the SM in the low byte, sm_90a's bit above it.
        let mut old = sample("cuda/extracted/gencode/gencode.2.sm_90.cubin");
        old[8] = 7;
        old[48..52].copy_from_slice(&0x0005_0a5au32.to_le_bytes());
        assert_eq!(BareImage::parse(&old).unwrap().target_id, "sm_90a");
    }

    #[test]
    fn ptx_is_told_by_its_directives_after_its_comments() {
        let text = sample("cuda/extracted/gencode/gencode.1.sm_90.ptx");
        let found = BareImage::parse(&text).unwrap();
        assert_eq!(found.kind, BareKind::Ptx);
        assert_eq!(found.target_id, "compute_90");
        assert_eq!(found.bytes.len(), text.len());
        let minimal = b"// c\n\n.version 8.8\n.target sm_100a\n.address_size 64\n\0rest";
        let found = BareImage::parse(minimal).unwrap();
        assert_eq!(found.target_id, "compute_100a");
        assert_eq!(found.bytes.len(), minimal.len() - 5);
        // Found from its `.version` inside other text: starts after the byte before it.
        let mut embedded = b"\x01\x02".to_vec();
        embedded.extend_from_slice(minimal);
        let at = 2 + 6;
        let found = BareImage::ptx_around(&embedded, at).unwrap();
        assert_eq!(found.bytes, &minimal[..minimal.len() - 5]);
        // Text before the directive on its line: no PTX.
        let prose = b"\0see the .version 8.8\n.target sm_90\n";
        assert_eq!(BareImage::ptx_around(prose, 9), None);
        // Comments further back than the limit: the module starts at its directive's line.
        let mut far = vec![0u8];
        far.extend(std::iter::repeat_n(b"// c\n".as_slice(), 20_000).flatten());
        let at = far.len();
        far.extend_from_slice(b".version 8.8\n.target sm_90\n");
        let found = BareImage::ptx_around(&far, at).unwrap();
        assert!(found.bytes.starts_with(b".version"));
        for not in [
            &b".version 8.8\n.targets sm_90\n"[..],
            b"the .version 8.8\n.target sm_90\n",
            b".version x\n.target sm_90\n",
            b".version 8.8\n.target sm_9z0\n",
        ] {
            assert_eq!(BareImage::parse(not), None);
        }
    }

    #[test]
    fn spirv_ends_with_its_last_instruction() {
        // Header, then OpCapability Addresses, OpMemoryModel Physical64 OpenCL.
        let words: [u32; 10] = [
            0x0723_0203,
            0x0001_0400,
            0,
            9,
            0,
            0x0002_0011,
            4,
            0x0003_000e,
            2,
            2,
        ];
        let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let found = BareImage::parse(&bytes).unwrap();
        assert_eq!(
            (found.kind, found.triple.as_str()),
            (BareKind::Spirv, "spirv64")
        );
        assert_eq!(found.bytes.len(), 40);
        bytes.extend_from_slice(&[0; 8]);
        assert_eq!(BareImage::parse(&bytes).unwrap().bytes.len(), 40);
        bytes[6] = 9;
        assert_eq!(BareImage::parse(&bytes), None);
    }

    #[test]
    fn device_bitcode_names_its_triple_and_host_bitcode_is_none() {
        let bytes = sample("dev/kernel-gfx90a.bc");
        let found = BareImage::parse(&bytes).unwrap();
        assert_eq!(found.kind, BareKind::Bitcode);
        assert_eq!(found.triple, "amdgcn-amd-amdhsa");
        assert_eq!(found.target_id, "gfx90a");
        assert_eq!(found.bytes.len(), bytes.len());
        let mut longer = bytes.clone();
        longer.extend_from_slice(b"\x7fELF and more bytes after it");
        assert_eq!(BareImage::parse(&longer).unwrap().bytes.len(), bytes.len());
    }
}
