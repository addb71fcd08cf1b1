//! Where offload data lives in host files: object files and their sections.

use object::FileKind;

/// Whether `data` is an object file (ELF, COFF, PE, Mach-O, XCOFF) that parses, which is what
/// makes clang-offload-bundler use its object handler for `-type=o` and `-type=a`.
pub fn is_object_file(data: &[u8]) -> bool {
    let object_kind = matches!(
        FileKind::parse(data),
        Ok(FileKind::Elf32
            | FileKind::Elf64
            | FileKind::Coff
            | FileKind::CoffBig
            | FileKind::Pe32
            | FileKind::Pe64
            | FileKind::MachO32
            | FileKind::MachO64
            | FileKind::Xcoff32
            | FileKind::Xcoff64)
    );
    object_kind && object::File::parse(data).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_bitcode_and_truncated_headers_are_not_objects() {
        assert!(!is_object_file(b"__CLANG_OFFLOAD_BUNDLE__"));
        assert!(!is_object_file(b"BC\xc0\xde"));
        assert!(!is_object_file(b"\x7fELF\x02\x01\x01"));
        assert!(!is_object_file(b""));
    }

    #[test]
    fn this_test_binary_is_an_object() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(is_object_file(&exe));
    }
}
