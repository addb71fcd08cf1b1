//! A bare AMDGPU code object: the ELF file the HIP runtime's `hipModuleLoad` takes as it is
//! (`.co`, `.hsaco`), told by its header, not its name: 64-bit little-endian ELF, OS ABI
//! `ELFOSABI_AMDGPU_HSA`, machine `EM_AMDGPU`, a processor of the table in `e_flags`. Its
//! target ID comes from the same header ([`code_object_target_id`]).
//!
//! # Example
//!
//! The header of a code object for gfx90a with XNACK on (code object version 4), made by hand:
//! its target ID comes from the processor number and the feature bits of `e_flags`.
//!
//! ```
//! use offload::format::code_object::CodeObject;
//!
//! let mut elf = [0u8; 64];
//! elf[..4].copy_from_slice(b"\x7fELF");
//! elf[4] = 2; // 64-bit
//! elf[5] = 1; // little-endian
//! elf[6] = 1; // ELF version
//! elf[7] = 64; // ELFOSABI_AMDGPU_HSA
//! elf[8] = 2; // ABI version 2: code object version 4
//! elf[18..20].copy_from_slice(&224u16.to_le_bytes()); // EM_AMDGPU
//! // gfx90a (0x3f), XNACK on (3 << 8), SRAMECC any (1 << 10).
//! elf[48..52].copy_from_slice(&(0x3f_u32 | 3 << 8 | 1 << 10).to_le_bytes());
//! elf[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
//!
//! let object = CodeObject::parse(&elf).expect("a code object");
//! assert_eq!(object.target_id, "gfx90a:xnack+");
//! assert_eq!(object.bytes.len(), 64);
//! assert!(CodeObject::parse(b"\x7fELF, but not one").is_none());
//! ```

use object::elf::{FileHeader64, SectionHeader64};
use object::LittleEndian as Le;

use crate::target::processor::code_object_target_id;

/// A code object at the start of some data, borrowing it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject<'a> {
    /// Its bytes, up to the end of its section header table, program header table or last
    /// section's contents, whichever is furthest.
    pub bytes: &'a [u8],
    /// Its target ID (`gfx90a:xnack+`, `gfx11-generic`).
    pub target_id: String,
}

impl<'a> CodeObject<'a> {
    /// The code object that `data` starts with; `None` when `data` does not start with an
    /// AMDGPU HSA code object's header (code object version 3 or later, a known processor),
    /// or its section header table does not lie inside `data`.
    pub fn parse(data: &'a [u8]) -> Option<CodeObject<'a>> {
        let target_id = code_object_target_id(data)?;
        let (header, _) = object::pod::from_bytes::<FileHeader64<Le>>(data).ok()?;
        let bytes = elf_extent(data, header)?;
        Some(CodeObject { bytes, target_id })
    }
}

/// `data` up to the end of the 64-bit ELF file whose header `header` it starts with: the
/// furthest of the ends of its section header table, its program header table and the
/// contents of its sections (NVIDIA's tools put the program headers last).
pub(crate) fn elf_extent<'a>(data: &'a [u8], header: &FileHeader64<Le>) -> Option<&'a [u8]> {
    let table = |offset: u64, count: u16, size: u16| {
        offset.checked_add(u64::from(count).checked_mul(u64::from(size))?)
    };
    let shoff = header.e_shoff.get(Le);
    let sections = table(shoff, header.e_shnum.get(Le), header.e_shentsize.get(Le))?;
    let programs = if header.e_phnum.get(Le) == 0 {
        0
    } else {
        let phoff = header.e_phoff.get(Le);
        table(phoff, header.e_phnum.get(Le), header.e_phentsize.get(Le))?
    };
    let header_end = std::mem::size_of::<FileHeader64<Le>>() as u64;
    let mut end = sections.max(programs).max(header_end);
    let table = data.get(usize::try_from(shoff).ok()?..usize::try_from(sections).ok()?)?;
    let (headers, _) = object::pod::slice_from_bytes::<SectionHeader64<Le>>(
        table,
        usize::from(header.e_shnum.get(Le)),
    )
    .ok()?;
    if usize::from(header.e_shentsize.get(Le)) == std::mem::size_of::<SectionHeader64<Le>>() {
        for section in headers {
            if section.sh_type.get(Le) != object::elf::SHT_NOBITS {
                let offset = section.sh_offset.get(Le);
                end = end.max(offset.checked_add(section.sh_size.get(Le))?);
            }
        }
    }
    data.get(..usize::try_from(end).ok()?)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn sample(name: &str) -> Vec<u8> {
        std::fs::read(format!("{}/samples/dev/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn a_code_object_is_told_by_its_header_and_ends_with_its_section_headers() {
        let bytes = sample("kernel-gfx90a_xnack+.hsaco");
        let found = CodeObject::parse(&bytes).unwrap();
        assert_eq!(found.target_id, "gfx90a:xnack+");
        assert_eq!(found.bytes.len(), bytes.len());
        // Cut short of its end, or followed by more: the headers say where it ends.
        assert_eq!(CodeObject::parse(&bytes[..bytes.len() - 1]), None);
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 100]);
        assert_eq!(CodeObject::parse(&longer).unwrap().bytes, &bytes[..]);
        // A host ELF file is none.
        let host = std::fs::read("/proc/self/exe").unwrap();
        assert_eq!(CodeObject::parse(&host), None);
    }
}
