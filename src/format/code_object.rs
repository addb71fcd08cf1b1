//! A bare AMDGPU code object: the ELF file the HIP runtime's `hipModuleLoad` takes as it is
//! (`.co`, `.hsaco`), told by its header, not its name: 64-bit little-endian ELF, OS ABI
//! `ELFOSABI_AMDGPU_HSA`, machine `EM_AMDGPU`, a processor of the table in `e_flags`. Its
//! target ID comes from the same header ([`code_object_target_id`]).

use object::elf::FileHeader64;
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
        let bytes = crate::format::bare::elf_extent(data, header)?;
        Some(CodeObject { bytes, target_id })
    }
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
