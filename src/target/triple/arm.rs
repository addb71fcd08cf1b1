//! LLVM 19's ARM target parser, reduced to what triple parsing needs: which ARM, Thumb or
//! AArch64 architecture and version an `arm*`, `thumb*` or `aarch64*` name denotes.
//!
//! It works on bytes because LLVM's rules are byte-based and names may be any text.

use crate::target::triple::{Arch, SubArch};

/// LLVM's `ARM::ArchKind`, in the order of LLVM 19's ARM architecture table.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ArchKind {
    Invalid,
    V4,
    V4t,
    V5t,
    V5te,
    V5tej,
    V6,
    V6k,
    V6t2,
    V6kz,
    V6m,
    V7a,
    V7ve,
    V7r,
    V7m,
    V7em,
    V8a,
    V8_1a,
    V8_2a,
    V8_3a,
    V8_4a,
    V8_5a,
    V8_6a,
    V8_7a,
    V8_8a,
    V8_9a,
    V9a,
    V9_1a,
    V9_2a,
    V9_3a,
    V9_4a,
    V9_5a,
    V8r,
    V8mBaseline,
    V8mMainline,
    V8_1mMainline,
    Iwmmxt,
    Iwmmxt2,
    Xscale,
    V7s,
    V7k,
}

/// LLVM 19's ARM architecture table. Lookup takes the first name that *ends with* the
/// wanted name, so the order matters (and `invalid` comes first).
const ARCH_KINDS: &[(&[u8], ArchKind)] = &[
    (b"invalid", ArchKind::Invalid),
    (b"armv4", ArchKind::V4),
    (b"armv4t", ArchKind::V4t),
    (b"armv5t", ArchKind::V5t),
    (b"armv5te", ArchKind::V5te),
    (b"armv5tej", ArchKind::V5tej),
    (b"armv6", ArchKind::V6),
    (b"armv6k", ArchKind::V6k),
    (b"armv6t2", ArchKind::V6t2),
    (b"armv6kz", ArchKind::V6kz),
    (b"armv6-m", ArchKind::V6m),
    (b"armv7-a", ArchKind::V7a),
    (b"armv7ve", ArchKind::V7ve),
    (b"armv7-r", ArchKind::V7r),
    (b"armv7-m", ArchKind::V7m),
    (b"armv7e-m", ArchKind::V7em),
    (b"armv8-a", ArchKind::V8a),
    (b"armv8.1-a", ArchKind::V8_1a),
    (b"armv8.2-a", ArchKind::V8_2a),
    (b"armv8.3-a", ArchKind::V8_3a),
    (b"armv8.4-a", ArchKind::V8_4a),
    (b"armv8.5-a", ArchKind::V8_5a),
    (b"armv8.6-a", ArchKind::V8_6a),
    (b"armv8.7-a", ArchKind::V8_7a),
    (b"armv8.8-a", ArchKind::V8_8a),
    (b"armv8.9-a", ArchKind::V8_9a),
    (b"armv9-a", ArchKind::V9a),
    (b"armv9.1-a", ArchKind::V9_1a),
    (b"armv9.2-a", ArchKind::V9_2a),
    (b"armv9.3-a", ArchKind::V9_3a),
    (b"armv9.4-a", ArchKind::V9_4a),
    (b"armv9.5-a", ArchKind::V9_5a),
    (b"armv8-r", ArchKind::V8r),
    (b"armv8-m.base", ArchKind::V8mBaseline),
    (b"armv8-m.main", ArchKind::V8mMainline),
    (b"armv8.1-m.main", ArchKind::V8_1mMainline),
    (b"iwmmxt", ArchKind::Iwmmxt),
    (b"iwmmxt2", ArchKind::Iwmmxt2),
    (b"xscale", ArchKind::Xscale),
    (b"armv7s", ArchKind::V7s),
    (b"armv7k", ArchKind::V7k),
];

/// LLVM 19's short spellings of ARM architecture versions and what they stand for.
const SYNONYMS: &[(&[u8], &[u8])] = &[
    (b"v5", b"v5t"),
    (b"v5e", b"v5te"),
    (b"v6j", b"v6"),
    (b"v6hl", b"v6k"),
    (b"v6m", b"v6-m"),
    (b"v6sm", b"v6-m"),
    (b"v6s-m", b"v6-m"),
    (b"v6z", b"v6kz"),
    (b"v6zk", b"v6kz"),
    (b"v7", b"v7-a"),
    (b"v7a", b"v7-a"),
    (b"v7hl", b"v7-a"),
    (b"v7l", b"v7-a"),
    (b"v7r", b"v7-r"),
    (b"v7m", b"v7-m"),
    (b"v7em", b"v7e-m"),
    (b"v8", b"v8-a"),
    (b"v8a", b"v8-a"),
    (b"v8l", b"v8-a"),
    (b"aarch64", b"v8-a"),
    (b"arm64", b"v8-a"),
    (b"v8.1a", b"v8.1-a"),
    (b"v8.2a", b"v8.2-a"),
    (b"v8.3a", b"v8.3-a"),
    (b"v8.4a", b"v8.4-a"),
    (b"v8.5a", b"v8.5-a"),
    (b"v8.6a", b"v8.6-a"),
    (b"v8.7a", b"v8.7-a"),
    (b"v8.8a", b"v8.8-a"),
    (b"v8.9a", b"v8.9-a"),
    (b"v8r", b"v8-r"),
    (b"v9", b"v9-a"),
    (b"v9a", b"v9-a"),
    (b"v9.1a", b"v9.1-a"),
    (b"v9.2a", b"v9.2-a"),
    (b"v9.3a", b"v9.3-a"),
    (b"v9.4a", b"v9.4-a"),
    (b"v9.5a", b"v9.5-a"),
    (b"v8m.base", b"v8-m.base"),
    (b"v8m.main", b"v8-m.main"),
    (b"v8.1m.main", b"v8.1-m.main"),
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Isa {
    Arm,
    Thumb,
    Aarch64,
    Invalid,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Endian {
    Little,
    Big,
    Invalid,
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// `text[start..]`, empty when `start` is past the end (LLVM's clamping `substr`).
fn tail(text: &[u8], start: usize) -> &[u8] {
    text.get(start..).unwrap_or_default()
}

/// LLVM's `ARM::getCanonicalArchName`: strips the `arm`/`thumb`/`aarch64`/`arm64` head and
/// any `eb`, leaving the version part (`v7a`), a marketing name (`xscale`), the whole name
/// when nothing is left, or empty when the name is malformed.
pub(super) fn canonical_arch_name(arch: &[u8]) -> &[u8] {
    let mut offset = if arch.starts_with(b"arm64_32") {
        Some(8)
    } else if arch.starts_with(b"arm64e") {
        Some(6)
    } else if arch.starts_with(b"arm64") {
        Some(5)
    } else if arch.starts_with(b"aarch64_32") {
        Some(10)
    } else if arch.starts_with(b"arm") {
        Some(3)
    } else if arch.starts_with(b"thumb") {
        Some(5)
    } else if arch.starts_with(b"aarch64") {
        // AArch64 spells big-endian "_be"; an "eb" anywhere makes the name invalid.
        if contains(arch, b"eb") {
            return b"";
        }
        Some(if tail(arch, 7).starts_with(b"_be") {
            10
        } else {
            7
        })
    } else {
        None
    };
    let mut rest = arch;
    match offset {
        Some(start) if tail(rest, start).starts_with(b"eb") => offset = Some(start + 2),
        _ => rest = rest.strip_suffix(b"eb").unwrap_or(rest),
    }
    if let Some(start) = offset {
        rest = tail(rest, start);
    }
    if rest.is_empty() {
        return arch;
    }
    if offset.is_some() {
        let versioned =
            rest.len() < 2 || matches!(rest, [b'v', digit, ..] if digit.is_ascii_digit());
        if !versioned || contains(rest, b"eb") {
            return b"";
        }
    }
    rest
}

fn synonym(name: &[u8]) -> &[u8] {
    SYNONYMS
        .iter()
        .find(|(short, _)| *short == name)
        .map_or(name, |&(_, long)| long)
}

/// LLVM's `ARM::parseArch`: canonicalise, expand the synonym, then take the first table
/// entry whose name ends with it (so `v7-a` finds `armv7-a`).
pub(super) fn parse_arch_kind(name: &[u8]) -> ArchKind {
    let wanted = synonym(canonical_arch_name(name));
    ARCH_KINDS
        .iter()
        .find(|(known, _)| known.ends_with(wanted))
        .map_or(ArchKind::Invalid, |&(_, kind)| kind)
}

fn parse_isa(name: &[u8]) -> Isa {
    if name.starts_with(b"aarch64") || name.starts_with(b"arm64") {
        Isa::Aarch64
    } else if name.starts_with(b"thumb") {
        Isa::Thumb
    } else if name.starts_with(b"arm") {
        Isa::Arm
    } else {
        Isa::Invalid
    }
}

fn parse_endian(name: &[u8]) -> Endian {
    if name.starts_with(b"armeb") || name.starts_with(b"thumbeb") || name.starts_with(b"aarch64_be")
    {
        return Endian::Big;
    }
    if name.starts_with(b"arm") || name.starts_with(b"thumb") {
        return if name.ends_with(b"eb") {
            Endian::Big
        } else {
            Endian::Little
        };
    }
    if name.starts_with(b"aarch64") {
        return Endian::Little;
    }
    Endian::Invalid
}

/// LLVM's `parseARMArch`: the architecture of an `arm*`, `thumb*` or `aarch64*` name that
/// is not in the exact-name table.
pub(super) fn parse_arch(name: &[u8]) -> Arch {
    let isa = parse_isa(name);
    let endian = parse_endian(name);
    let arch = match (isa, endian) {
        (Isa::Arm, Endian::Little) => Arch::Arm,
        (Isa::Thumb, Endian::Little) => Arch::Thumb,
        (Isa::Aarch64, Endian::Little) => Arch::Aarch64,
        (Isa::Arm, Endian::Big) => Arch::Armeb,
        (Isa::Thumb, Endian::Big) => Arch::Thumbeb,
        (Isa::Aarch64, Endian::Big) => Arch::Aarch64Be,
        _ => Arch::UnknownArch,
    };
    let version = canonical_arch_name(name);
    if version.is_empty() {
        return Arch::UnknownArch;
    }
    // Thumb starts at ARMv4.
    if isa == Isa::Thumb && (version.starts_with(b"v2") || version.starts_with(b"v3")) {
        return Arch::UnknownArch;
    }
    // ARMv6-M (the only M profile of version 6) has only Thumb.
    if parse_arch_kind(version) == ArchKind::V6m {
        return if endian == Endian::Big {
            Arch::Thumbeb
        } else {
            Arch::Thumb
        };
    }
    arch
}

/// The triple sub-architecture LLVM 19 assigns to an ARM architecture.
pub(super) fn sub_arch(kind: ArchKind) -> SubArch {
    match kind {
        ArchKind::Invalid | ArchKind::V4 => SubArch::NoSubArch,
        ArchKind::V4t => SubArch::ArmV4t,
        ArchKind::V5t => SubArch::ArmV5,
        ArchKind::V5te
        | ArchKind::Iwmmxt
        | ArchKind::Iwmmxt2
        | ArchKind::Xscale
        | ArchKind::V5tej => SubArch::ArmV5te,
        ArchKind::V6 => SubArch::ArmV6,
        ArchKind::V6k | ArchKind::V6kz => SubArch::ArmV6k,
        ArchKind::V6t2 => SubArch::ArmV6t2,
        ArchKind::V6m => SubArch::ArmV6m,
        ArchKind::V7a | ArchKind::V7r => SubArch::ArmV7,
        ArchKind::V7ve => SubArch::ArmV7ve,
        ArchKind::V7k => SubArch::ArmV7k,
        ArchKind::V7m => SubArch::ArmV7m,
        ArchKind::V7s => SubArch::ArmV7s,
        ArchKind::V7em => SubArch::ArmV7em,
        ArchKind::V8a => SubArch::ArmV8,
        ArchKind::V8_1a => SubArch::ArmV8_1a,
        ArchKind::V8_2a => SubArch::ArmV8_2a,
        ArchKind::V8_3a => SubArch::ArmV8_3a,
        ArchKind::V8_4a => SubArch::ArmV8_4a,
        ArchKind::V8_5a => SubArch::ArmV8_5a,
        ArchKind::V8_6a => SubArch::ArmV8_6a,
        ArchKind::V8_7a => SubArch::ArmV8_7a,
        ArchKind::V8_8a => SubArch::ArmV8_8a,
        ArchKind::V8_9a => SubArch::ArmV8_9a,
        ArchKind::V9a => SubArch::ArmV9,
        ArchKind::V9_1a => SubArch::ArmV9_1a,
        ArchKind::V9_2a => SubArch::ArmV9_2a,
        ArchKind::V9_3a => SubArch::ArmV9_3a,
        ArchKind::V9_4a => SubArch::ArmV9_4a,
        ArchKind::V9_5a => SubArch::ArmV9_5a,
        ArchKind::V8r => SubArch::ArmV8r,
        ArchKind::V8mBaseline => SubArch::ArmV8mBaseline,
        ArchKind::V8mMainline => SubArch::ArmV8mMainline,
        ArchKind::V8_1mMainline => SubArch::ArmV8_1mMainline,
    }
}
