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
//!
//! # Example
//!
//! PTX text is a bare device image: its `.target` directive names its SM.
//!
//! ```
//! use offload::format::bare::{BareImage, BareKind};
//!
//! let ptx = b"//\n.version 8.0\n.target sm_80\n.address_size 64\n";
//! let image = BareImage::parse(ptx).expect("PTX");
//! assert_eq!(image.kind, BareKind::Ptx);
//! assert_eq!(image.triple, "nvptx64-nvidia-cuda");
//! // PTX is for a virtual architecture, which the `.target` SM names.
//! assert_eq!(image.target_id, "compute_80");
//! assert_eq!(image.kind.image_kind(), "ptx");
//! assert_eq!(BareKind::from_name("spirv"), Some(BareKind::Spirv));
//! assert!(BareImage::parse(b"plain text").is_none());
//! ```

use object::elf::FileHeader64;
use object::LittleEndian as Le;

use crate::format::code_object::{elf_extent, CodeObject};
use crate::llvm::bitcode::attributes;
use crate::llvm::bitcode::reader as bitcode;

/// The ELF machine of CUDA cubins.
pub const EM_CUDA: u16 = 190;

/// The triple of CUDA device code (cubins and PTX).
pub const CUDA_TRIPLE: &str = "nvptx64-nvidia-cuda";

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
        ptx(data, 0, &mut Skipped::default())
    }

    /// The PTX module whose `.version` directive starts at `at` in `data`: it starts after
    /// the NUL or other byte no text holds before it, when only comments and blank lines lie
    /// between; else at the directive's line, which must hold nothing before it.
    pub fn ptx_around(data: &'a [u8], at: usize) -> Option<BareImage<'a>> {
        Embedded::new(data).ptx_at(at)
    }
}

/// The search for bare device images embedded in data (a program's `.rodata`), magic after
/// magic in increasing order: it remembers what it has read, so that the work of the whole
/// search follows the bytes of the data, however many magics lie in them. Bitcode's top-level
/// blocks are walked once: a magic whose walk meets a block an earlier walk reached lies in
/// that earlier candidate's blocks, and is no bitcode of its own. PTX's backward look for the
/// comments before a `.version` resumes where the last one ended.
pub struct Embedded<'a> {
    data: &'a [u8],
    /// The offsets of the top-level bitcode entries walks have reached.
    walked: std::collections::HashSet<usize>,
    /// What the bytes before the last `.version` looked at hold.
    back: PtxBack,
    /// The last comments skipped after a `.version` directive.
    skipped: Skipped,
}

/// What the text before a position holds, read forward once: the last byte no text holds,
/// the last line feed, the last byte not white space, and whether the text since the last
/// byte no text holds is only comments and white space.
#[derive(Debug, Default, Clone, Copy)]
struct PtxBack {
    /// How far the data has been read.
    read: usize,
    last_binary: Option<usize>,
    last_newline: Option<usize>,
    last_not_blank: Option<usize>,
    comments: CommentState,
}

/// Where a reading of comments and white space is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum CommentState {
    /// Between comments, at white space.
    #[default]
    Blank,
    /// After one `/`.
    Slash,
    /// In a `//` comment, up to its line feed.
    Comment,
    /// Text other than comments met.
    Other,
}

impl CommentState {
    fn next(self, b: u8) -> CommentState {
        match (self, b) {
            (CommentState::Other, _) => CommentState::Other,
            (CommentState::Comment, b'\n') => CommentState::Blank,
            (CommentState::Comment, _) => CommentState::Comment,
            (CommentState::Slash, b'/') => CommentState::Comment,
            (CommentState::Blank, b'/') => CommentState::Slash,
            (CommentState::Blank, b) if b.is_ascii_whitespace() => CommentState::Blank,
            _ => CommentState::Other,
        }
    }
}

impl PtxBack {
    /// Reads on up to `at`: from where the last reading ended, or from the start of the
    /// window before `at` when that is further on (what lies before the window is never
    /// asked for); a position before the last one read starts over.
    fn read_to(&mut self, data: &[u8], at: usize) {
        if at < self.read {
            *self = PtxBack::default();
        }
        let from = self.read.max(at.saturating_sub(PTX_HEAD_LIMIT));
        let slice = data.get(from..at.min(data.len())).unwrap_or_default();
        // Each field is the last of its kind, so each is looked for from the end; the
        // comments are read from the last byte no text holds (which starts them over) on.
        if let Some(k) = memchr::memrchr(b'\n', slice) {
            self.last_newline = Some(from + k);
        }
        if let Some(k) = slice.iter().rposition(|b| !b.is_ascii_whitespace()) {
            self.last_not_blank = Some(from + k);
        }
        let text = match slice.iter().rposition(|&b| !is_text(b)) {
            Some(k) => {
                self.last_binary = Some(from + k);
                self.comments = CommentState::Blank;
                slice.get(k + 1..).unwrap_or_default()
            }
            None => slice,
        };
        for &b in text {
            if self.comments == CommentState::Other {
                break;
            }
            self.comments = self.comments.next(b);
        }
        self.read = self.read.max(at);
    }
}

/// The last stretch of comments a PTX reading skipped forward, by how many bytes of the data
/// were left where it started and where it ended: counted from the data's end, any suffix of
/// the data tells whether it starts in the stretch.
#[derive(Debug, Default, Clone, Copy)]
struct Skipped {
    from_left: usize,
    to_left: usize,
}

impl Skipped {
    /// [`skip_comments`] of `text`, a suffix of the data: when `text` starts in the last
    /// stretch skipped, it ends where that one did as soon as its reading reaches a line feed
    /// of the stretch (after one, both read the same bytes from the same state), so that
    /// `.version` directives in a long run of comments do not each read the rest of the run.
    fn skip<'t>(&mut self, text: &'t [u8]) -> &'t [u8] {
        let left = text.len();
        if left <= self.from_left && left > self.to_left {
            let stretch = left - self.to_left;
            let head = text.get(..stretch).unwrap_or_default();
            let limit = memchr::memchr(b'\n', head).map_or(stretch, |n| n + 1);
            let rest = skip_comments(head.get(..limit).unwrap_or_default());
            let resume = if rest.is_empty() {
                stretch
            } else {
                limit - rest.len()
            };
            return text.get(resume..).unwrap_or_default();
        }
        let rest = skip_comments(text);
        *self = Skipped {
            from_left: left,
            to_left: rest.len(),
        };
        rest
    }
}

impl<'a> Embedded<'a> {
    /// A search of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Embedded {
            data,
            walked: std::collections::HashSet::new(),
            back: PtxBack::default(),
            skipped: Skipped::default(),
        }
    }

    /// The bare device image whose magic (or PTX's `.version`) is at `at`, if any. Positions
    /// asked for must increase for the search to read each byte a bounded number of times.
    pub fn at(&mut self, at: usize) -> Option<BareImage<'a>> {
        let here = self.data.get(at..)?;
        if here.starts_with(PTX_MAGIC) {
            return self.ptx_at(at);
        }
        if here.starts_with(&bitcode::RAW_MAGIC) {
            let walked = &mut self.walked;
            let extent = bitcode::extent_fresh(here, &mut |entry| {
                at.checked_add(entry)
                    .is_some_and(|entry| walked.insert(entry))
            })?;
            return device_bitcode_of(here.get(..extent)?);
        }
        BareImage::parse(here)
    }

    /// [`BareImage::ptx_around`] of this search's data, reading on from the last position.
    fn ptx_at(&mut self, at: usize) -> Option<BareImage<'a>> {
        // Comments before the directive are looked for this far back at most.
        let window = at.saturating_sub(PTX_HEAD_LIMIT);
        let data = self.data;
        self.back.read_to(data, at);
        let back = self.back;
        // Where the text starts: after the last byte no text holds, or at the start of the
        // data; not known when the window holds text alone and the data goes further back.
        let text_start = back.last_binary.map_or(0, |b| b + 1);
        let in_window = text_start > window || (text_start == 0 && window == 0);
        let only_comments =
            back.comments != CommentState::Slash && back.comments != CommentState::Other;
        let start = if in_window && only_comments {
            text_start
        } else {
            // Else the directive starts its line (after white space), or it is no PTX.
            let line = back
                .last_newline
                .filter(|&n| n >= window)
                .map_or(window, |n| n + 1);
            if back.last_not_blank.is_some_and(|b| b >= line) {
                return None;
            }
            line
        };
        ptx(data.get(start..)?, at - start, &mut self.skipped)
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
        triple: CUDA_TRIPLE.into(),
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
    let mut at: usize = 0;
    while let Some(&[format, attribute, value, high]) = records.get(at..).and_then(|r| r.get(..4)) {
        let len = match format {
            1..=3 if attribute == 9 => return value == 1,
            1..=3 => 4,
            4 => 4 + usize::from(u16::from_le_bytes([value, high])),
            _ => return false,
        };
        let Some(next) = at.checked_add(len) else {
            return false;
        };
        at = next;
    }
    false
}

/// A SPIR-V module: its magic, a version word `0x00MMmm00` of 1.0 to 1.6, a bound, a zero
/// schema, then instructions as long as their word counts hold; the addressing model of its
/// `OpMemoryModel` gives the triple.
fn spirv(data: &[u8]) -> Option<BareImage<'_>> {
    let word = |i: usize| {
        data.get(i.checked_mul(4)?..)?
            .get(..4)
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
        let Some(next) = at.checked_add(count).filter(|_| count > 0) else {
            break;
        };
        if word(next - 1).is_none() {
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
        at = next;
    }
    if at == 5 {
        return None;
    }
    Some(BareImage {
        kind: BareKind::Spirv,
        bytes: data.get(..at.checked_mul(4)?)?,
        triple: triple.into(),
        target_id: String::new(),
    })
}

/// Bitcode whose IR symbol table names a device's triple.
fn device_bitcode(data: &[u8]) -> Option<BareImage<'_>> {
    device_bitcode_of(data.get(..bitcode::extent(data)?)?)
}

/// The bitcode `bytes`, to its extent, when its IR symbol table names a device's triple.
fn device_bitcode_of(bytes: &[u8]) -> Option<BareImage<'_>> {
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
fn ptx<'a>(data: &'a [u8], at: usize, skipped: &mut Skipped) -> Option<BareImage<'a>> {
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
    let rest = skipped.skip(rest.get(digits..)?).strip_prefix(b".target")?;
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
            CUDA_TRIPLE.into()
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
    fn a_chain_of_bitcode_magics_is_walked_once() {
        // Each 12-byte block: the magic, an identification block's header, a length of one
        // word, which is the next block's magic.
        let header: u32 = 1 | (13 << 2) | (2 << 10);
        let block: Vec<u8> = [*b"BC\xc0\xde", header.to_le_bytes(), 1u32.to_le_bytes()].concat();
        let blocks = 1000;
        let data = block.repeat(blocks);
        let mut walked = std::collections::HashSet::new();
        let mut steps = 0;
        for at in (0..data.len()).step_by(12) {
            let extent = bitcode::extent_fresh(&data[at..], &mut |entry| {
                steps += 1;
                walked.insert(at + entry)
            });
            // The first walk goes through every block; each later one meets it at once.
            assert_eq!(extent.is_some(), at == 0, "{at}");
        }
        // Walked from each magic, the blocks after it: half a million steps.
        assert!(steps < 2 * blocks, "{steps} steps");
        let mut search = Embedded::new(&data);
        for at in (0..data.len()).step_by(12) {
            assert_eq!(search.at(at), None);
        }
        assert!(search.walked.len() < blocks, "{}", search.walked.len());
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
