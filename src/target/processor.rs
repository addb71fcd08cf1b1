//! The AMDGPU processors, as data: one row per processor, generic target and SPIR-V target,
//! with its aliases, the target features it has, the ELF machine value its code objects
//! carry, the LLVM releases that know it, and the generic target that covers it, both as LLVM
//! documents it and as the HIP runtime maps it (they differ).
//!
//! Adding a processor is adding one row. A processor no row names is still a processor: target
//! IDs are parsed without this table, and an image for an unknown processor is listed, chosen by
//! its exact name and kept or removed like any other; the table only adds what is known about it.
//!
//! # Example
//!
//! Look a processor up in the table.
//!
//! ```
//! use offload::target::processor::{self, LlvmVersion, Processor, ProcessorKind};
//!
//! let gfx90a = Processor::named("gfx90a").unwrap();
//! assert_eq!(gfx90a.mach, Some(0x3f));
//! assert_eq!(gfx90a.features(), ["sramecc", "xnack"]);
//! assert_eq!(gfx90a.kind(), ProcessorKind::Native);
//! assert!(gfx90a.known_by(LlvmVersion::V19));
//!
//! let gfx1101 = Processor::named("gfx1101").unwrap();
//! assert!(Processor::covered_by("gfx11-generic").any(|p| p == gfx1101));
//! assert_eq!(processor::processor_class("gfx11-generic"), Some("generic"));
//! assert_eq!(processor::processor_class("gfx9999"), Some("unknown"));
//! assert_eq!(processor::processor_class("sm_80"), None);
//! ```

/// The LLVM releases this project's personalities stand in for, in the order they came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LlvmVersion {
    /// LLVM 19: the processor table with gfx940 and gfx941 and without gfx950; compressed
    /// bundles version 2; HIP offload kind 3.
    V19,
    /// LLVM 22: gfx950, gfx1153, gfx1250, gfx1251 and gfx9-4-generic known, gfx940 and gfx941
    /// gone; compressed bundles version 3; HIP offload kind 4; `llvm-offload-binary`.
    V22,
    /// LLVM 23: as 22 where it did not change what these tools do (docs/llvm-compat.md lists
    /// what it changed).
    V23,
}

impl LlvmVersion {
    /// The version a tool stands in for when nothing chooses one: the newest.
    pub const DEFAULT: LlvmVersion = LlvmVersion::V23;

    /// Every version, oldest first.
    pub const ALL: [LlvmVersion; 3] = [LlvmVersion::V19, LlvmVersion::V22, LlvmVersion::V23];

    /// The major release number.
    pub fn major(self) -> u8 {
        match self {
            LlvmVersion::V19 => 19,
            LlvmVersion::V22 => 22,
            LlvmVersion::V23 => 23,
        }
    }

    /// The version whose behaviour a release `major` has: 19 and older behave as 19, 20 to 22
    /// as 22 (the releases between differ from 22 in details no test here covers), 23 and
    /// newer as 23.
    pub fn of_release(major: u32) -> LlvmVersion {
        match major {
            ..=19 => LlvmVersion::V19,
            20..=22 => LlvmVersion::V22,
            _ => LlvmVersion::V23,
        }
    }
}

/// What a row of the table names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessorKind {
    /// A processor: code for it runs on devices of that processor.
    Native,
    /// A generic target: code for it runs on every processor it covers.
    Generic,
    /// SPIR-V for AMD GPUs (`amdgcnspirv`): the runtime compiles it for any AMD GPU.
    Spirv,
}

impl ProcessorKind {
    /// The kind of the target ID processor `name`, whether or not the table has it.
    pub fn of_name(name: &str) -> ProcessorKind {
        if name == SPIRV {
            ProcessorKind::Spirv
        } else if name.ends_with("-generic") {
            ProcessorKind::Generic
        } else {
            ProcessorKind::Native
        }
    }

    /// `native`, `generic` or `spirv`.
    pub fn name(self) -> &'static str {
        match self {
            ProcessorKind::Native => "native",
            ProcessorKind::Generic => "generic",
            ProcessorKind::Spirv => "spirv",
        }
    }
}

/// The processor name of SPIR-V for AMD GPUs.
pub const SPIRV: &str = "amdgcnspirv";

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Processor {
    /// The canonical name, as in target IDs.
    pub name: &'static str,
    /// `EF_AMDGPU_MACH` of its code objects (`None` for SPIR-V).
    pub mach: Option<u16>,
    /// Whether target IDs may set `xnack` for it.
    pub xnack: bool,
    /// Whether target IDs may set `sramecc` for it.
    pub sramecc: bool,
    /// The first release, among 19, 22 and those after 22, whose processor table has it (19
    /// means 19 or older; 23 means newer than 22, the exact release not checked).
    pub since: u8,
    /// The last release that has it; [`STILL`] while LLVM keeps it.
    pub until: u8,
    /// The generic target that covers it in LLVM's documentation.
    pub generic_llvm: Option<&'static str>,
    /// The generic target the HIP runtime loads for it when a bundle has no native code.
    pub generic_hip: Option<&'static str>,
    /// Other names for it (LLVM's marketing names for old processors).
    pub aliases: &'static [&'static str],
}

/// [`Processor::until`] of a processor LLVM has not retired.
pub const STILL: u8 = u8::MAX;

const N: bool = false;
const Y: bool = true;

#[allow(clippy::too_many_arguments)]
const fn row(
    name: &'static str,
    mach: u16,
    (xnack, sramecc): (bool, bool),
    (since, until): (u8, u8),
    generic_llvm: &'static str,
    generic_hip: &'static str,
    aliases: &'static [&'static str],
) -> Processor {
    Processor {
        name,
        mach: if mach == 0 { None } else { Some(mach) },
        xnack,
        sramecc,
        since,
        until,
        generic_llvm: if generic_llvm.is_empty() {
            None
        } else {
            Some(generic_llvm)
        },
        generic_hip: if generic_hip.is_empty() {
            None
        } else {
            Some(generic_hip)
        },
        aliases,
    }
}

/// The table. Columns: name, `EF_AMDGPU_MACH` (0: none), (xnack, sramecc), (first, last LLVM
/// release), covering generic per LLVM, covering generic per the HIP runtime, aliases.
///
/// Sources: LLVM's `ELF.h` and target parser of 19.1.7 and 22.1.8 (checked against their
/// tools), LLVM's AMDGPU usage guide for generic coverage, the HIP runtime's generic map
/// (`TargetGenericMap`), and, for processors newer than 22, LLVM's main branch.
#[rustfmt::skip]
pub const PROCESSORS: &[Processor] = &[
    row("gfx600",          0x020, (N, N), (19, STILL), "",                "",                &["tahiti"]),
    row("gfx601",          0x021, (N, N), (19, STILL), "",                "",                &["pitcairn", "verde"]),
    row("gfx602",          0x03a, (N, N), (19, STILL), "",                "",                &["hainan", "oland"]),
    row("gfx700",          0x022, (N, N), (19, STILL), "",                "",                &["kaveri"]),
    row("gfx701",          0x023, (N, N), (19, STILL), "",                "",                &["hawaii"]),
    row("gfx702",          0x024, (N, N), (19, STILL), "",                "",                &[]),
    row("gfx703",          0x025, (N, N), (19, STILL), "",                "",                &["kabini", "mullins"]),
    row("gfx704",          0x026, (N, N), (19, STILL), "",                "",                &["bonaire"]),
    row("gfx705",          0x03b, (N, N), (19, STILL), "",                "",                &[]),
    row("gfx801",          0x028, (Y, N), (19, STILL), "",                "",                &["carrizo"]),
    row("gfx802",          0x029, (N, N), (19, STILL), "",                "",                &["iceland", "tonga"]),
    row("gfx803",          0x02a, (N, N), (19, STILL), "",                "",                &["fiji", "polaris10", "polaris11"]),
    row("gfx805",          0x03c, (N, N), (19, STILL), "",                "",                &["tongapro"]),
    row("gfx810",          0x02b, (Y, N), (19, STILL), "",                "",                &["stoney"]),
    row("gfx900",          0x02c, (Y, N), (19, STILL), "gfx9-generic",    "gfx9-generic",    &[]),
    row("gfx902",          0x02d, (Y, N), (19, STILL), "gfx9-generic",    "gfx9-generic",    &[]),
    row("gfx904",          0x02e, (Y, N), (19, STILL), "gfx9-generic",    "gfx9-generic",    &[]),
    row("gfx906",          0x02f, (Y, Y), (19, STILL), "gfx9-generic",    "gfx9-generic",    &[]),
    row("gfx908",          0x030, (Y, Y), (19, STILL), "",                "",                &[]),
    row("gfx909",          0x031, (Y, N), (19, STILL), "gfx9-generic",    "gfx9-generic",    &[]),
    row("gfx90a",          0x03f, (Y, Y), (19, STILL), "",                "",                &[]),
    row("gfx90c",          0x032, (Y, N), (19, STILL), "gfx9-generic",    "gfx9-generic",    &[]),
    row("gfx940",          0x040, (Y, Y), (19, 20),    "gfx9-4-generic",  "",                &[]),
    row("gfx941",          0x04b, (Y, Y), (19, 20),    "gfx9-4-generic",  "",                &[]),
    row("gfx942",          0x04c, (Y, Y), (19, STILL), "gfx9-4-generic",  "gfx9-4-generic",  &[]),
    row("gfx950",          0x04f, (Y, Y), (22, STILL), "gfx9-4-generic",  "gfx9-4-generic",  &[]),
    row("gfx1010",         0x033, (Y, N), (19, STILL), "gfx10-1-generic", "gfx10-1-generic", &[]),
    row("gfx1011",         0x034, (Y, N), (19, STILL), "gfx10-1-generic", "gfx10-1-generic", &[]),
    row("gfx1012",         0x035, (Y, N), (19, STILL), "gfx10-1-generic", "gfx10-1-generic", &[]),
    row("gfx1013",         0x042, (Y, N), (19, STILL), "gfx10-1-generic", "gfx10-1-generic", &[]),
    row("gfx1030",         0x036, (N, N), (19, STILL), "gfx10-3-generic", "gfx10-3-generic", &[]),
    row("gfx1031",         0x037, (N, N), (19, STILL), "gfx10-3-generic", "gfx10-3-generic", &[]),
    row("gfx1032",         0x038, (N, N), (19, STILL), "gfx10-3-generic", "gfx10-3-generic", &[]),
    row("gfx1033",         0x039, (N, N), (19, STILL), "gfx10-3-generic", "gfx10-3-generic", &[]),
    row("gfx1034",         0x03e, (N, N), (19, STILL), "gfx10-3-generic", "gfx10-3-generic", &[]),
    row("gfx1035",         0x03d, (N, N), (19, STILL), "gfx10-3-generic", "gfx10-3-generic", &[]),
    row("gfx1036",         0x045, (N, N), (19, STILL), "gfx10-3-generic", "gfx10-3-generic", &[]),
    row("gfx1100",         0x041, (N, N), (19, STILL), "gfx11-generic",   "gfx11-generic",   &[]),
    row("gfx1101",         0x046, (N, N), (19, STILL), "gfx11-generic",   "gfx11-generic",   &[]),
    row("gfx1102",         0x047, (N, N), (19, STILL), "gfx11-generic",   "gfx11-generic",   &[]),
    row("gfx1103",         0x044, (N, N), (19, STILL), "gfx11-generic",   "gfx11-generic",   &[]),
    row("gfx1150",         0x043, (N, N), (19, STILL), "gfx11-generic",   "gfx11-generic",   &[]),
    row("gfx1151",         0x04a, (N, N), (19, STILL), "gfx11-generic",   "gfx11-generic",   &[]),
    row("gfx1152",         0x055, (N, N), (19, STILL), "gfx11-generic",   "gfx11-generic",   &[]),
    row("gfx1153",         0x058, (N, N), (22, STILL), "gfx11-generic",   "gfx11-generic",   &[]),
    row("gfx1154",         0x057, (N, N), (23, STILL), "gfx11-generic",   "",                &[]),
    row("gfx1170",         0x05d, (N, N), (23, STILL), "gfx11-7-generic", "",                &[]),
    row("gfx1171",         0x05e, (N, N), (23, STILL), "gfx11-7-generic", "",                &[]),
    row("gfx1172",         0x05c, (N, N), (23, STILL), "gfx11-7-generic", "",                &[]),
    row("gfx1200",         0x048, (N, N), (19, STILL), "gfx12-generic",   "gfx12-generic",   &[]),
    row("gfx1201",         0x04e, (N, N), (19, STILL), "gfx12-generic",   "gfx12-generic",   &[]),
    row("gfx1250",         0x049, (N, N), (22, STILL), "gfx12-5-generic", "gfx12-5-generic", &[]),
    row("gfx1251",         0x05a, (N, N), (22, STILL), "gfx12-5-generic", "",                &[]),
    row("gfx1310",         0x050, (N, N), (23, STILL), "gfx13-generic",   "",                &[]),
    row("gfx9-generic",    0x051, (Y, N), (19, STILL), "",                "",                &[]),
    row("gfx9-4-generic",  0x05f, (Y, Y), (22, STILL), "",                "",                &[]),
    row("gfx10-1-generic", 0x052, (Y, N), (19, STILL), "",                "",                &[]),
    row("gfx10-3-generic", 0x053, (N, N), (19, STILL), "",                "",                &[]),
    row("gfx11-generic",   0x054, (N, N), (19, STILL), "",                "",                &[]),
    row("gfx11-7-generic", 0x062, (N, N), (23, STILL), "",                "",                &[]),
    row("gfx12-generic",   0x059, (N, N), (19, STILL), "",                "",                &[]),
    row("gfx12-5-generic", 0x05b, (N, N), (23, STILL), "",                "",                &[]),
    row("gfx13-generic",   0x063, (N, N), (23, STILL), "",                "",                &[]),
    row(SPIRV,             0,     (N, N), (19, STILL), "",                "",                &[]),
];

impl Processor {
    /// The row for `name`, a canonical name or an alias, whichever release knows it.
    pub fn named(name: &str) -> Option<&'static Processor> {
        PROCESSORS
            .iter()
            .find(|p| p.name == name || p.aliases.contains(&name))
    }

    /// The row for `name` if LLVM `version`'s processor table has it.
    pub fn named_in(version: LlvmVersion, name: &str) -> Option<&'static Processor> {
        Processor::named(name).filter(|p| p.known_by(version))
    }

    /// Whether LLVM `version`'s AMDGCN processor table has it (SPIR-V is not an AMDGCN
    /// processor).
    pub fn known_by(&self, version: LlvmVersion) -> bool {
        self.kind() != ProcessorKind::Spirv
            && self.since <= version.major()
            && version.major() <= self.until
    }

    /// Whether it is a processor, a generic target or SPIR-V.
    pub fn kind(&self) -> ProcessorKind {
        ProcessorKind::of_name(self.name)
    }

    /// The target features it has, in alphabetical order.
    pub fn features(&self) -> &'static [&'static str] {
        match (self.sramecc, self.xnack) {
            (true, true) => &["sramecc", "xnack"],
            (true, false) => &["sramecc"],
            (false, true) => &["xnack"],
            (false, false) => &[],
        }
    }

    /// The generic targets that cover it: LLVM's and the HIP runtime's, each once.
    pub fn covering_generics(&self) -> impl Iterator<Item = &'static str> {
        let hip = self.generic_hip.filter(|g| Some(*g) != self.generic_llvm);
        self.generic_llvm.into_iter().chain(hip)
    }

    /// The processors `generic` covers, by LLVM's list or the HIP runtime's.
    pub fn covered_by(generic: &str) -> impl Iterator<Item = &'static Processor> + '_ {
        PROCESSORS
            .iter()
            .filter(move |p| p.covering_generics().any(|g| g == generic))
    }
}

/// What `offload ls` says an AMDGPU target ID's processor is: `native`, `generic` or `spirv`
/// when the table has it, `unknown` for a `gfx` name it lacks (a processor newer than the
/// table, or a misspelling); `None` for other targets (`sm_80`) and images without one.
pub fn processor_class(target_id: &str) -> Option<&'static str> {
    let processor = target_id.split(':').next().unwrap_or(target_id);
    match Processor::named(processor) {
        Some(p) => Some(p.kind().name()),
        None if processor.starts_with("gfx") => Some("unknown"),
        None => None,
    }
}

/// The target ID an AMDGPU code object was built for, read from its ELF header: the processor
/// by `EF_AMDGPU_MACH`, then the `sramecc` and `xnack` settings its flags fix (`Any` and
/// `Unsupported` add nothing), as `gfx90a:sramecc-:xnack+`. `None` when `bytes` do not start
/// with a 64-bit little-endian AMDGPU HSA ELF header of code object version 3 or later, or
/// the processor is not in the table.
pub fn code_object_target_id(bytes: &[u8]) -> Option<String> {
    use object::elf::{FileHeader64, ELFCLASS64, ELFDATA2LSB, ELFMAG, EM_AMDGPU};
    use object::LittleEndian as Le;
    const ELFOSABI_AMDGPU_HSA: u8 = 64;
    let (header, _) = object::pod::from_bytes::<FileHeader64<Le>>(bytes).ok()?;
    let ident = &header.e_ident;
    let is_amdgpu = ident.magic == ELFMAG
        && ident.class == ELFCLASS64
        && ident.data == ELFDATA2LSB
        && ident.os_abi.0 == ELFOSABI_AMDGPU_HSA
        && header.e_machine.get(Le) == EM_AMDGPU;
    if !is_amdgpu {
        return None;
    }
    let flags = header.e_flags.get(Le).0;
    let mach = (flags & 0xff) as u16;
    let processor = PROCESSORS.iter().find(|p| p.mach == Some(mach))?;
    // ABI version 1 is code object v3 (one bit per feature, on or off); 2 and later are v4+
    // (two bits: unsupported, any, off, on).
    let (sramecc, xnack) = match ident.abi_version {
        0 => return None,
        1 => (
            Some(if flags & 0x200 != 0 { '+' } else { '-' }),
            Some(if flags & 0x100 != 0 { '+' } else { '-' }),
        ),
        _ => {
            let setting = |bits: u32| match bits {
                2 => Some('-'),
                3 => Some('+'),
                _ => None,
            };
            (setting((flags >> 10) & 3), setting((flags >> 8) & 3))
        }
    };
    let mut id = processor.name.to_string();
    for (name, allowed, setting) in [
        ("sramecc", processor.sramecc, sramecc),
        ("xnack", processor.xnack, xnack),
    ] {
        if let (true, Some(sign)) = (allowed, setting) {
            id.push_str(&format!(":{name}{sign}"));
        }
    }
    Some(id)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn a_code_object_s_header_gives_its_target_id() {
        let sample = |name: &str| {
            let path = format!("{}/samples/dev/{name}", env!("CARGO_MANIFEST_DIR"));
            code_object_target_id(&std::fs::read(path).unwrap())
        };
        assert_eq!(sample("kernel-gfx906.hsaco").as_deref(), Some("gfx906"));
        assert_eq!(sample("kernel-gfx90a.hsaco").as_deref(), Some("gfx90a"));
        assert_eq!(
            sample("kernel-gfx90a_xnack+.hsaco").as_deref(),
            Some("gfx90a:xnack+")
        );
        assert_eq!(
            sample("kernel-gfx908_sramecc+_xnack-.hsaco").as_deref(),
            Some("gfx908:sramecc+:xnack-")
        );
        // Version 3: one bit per feature.
        let mut v3 = std::fs::read(format!(
            "{}/samples/dev/kernel-gfx906.hsaco",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        v3[8] = 1;
        v3[48..52].copy_from_slice(&(0x02f_u32 | 0x100).to_le_bytes());
        assert_eq!(
            code_object_target_id(&v3).as_deref(),
            Some("gfx906:sramecc-:xnack+")
        );
        // Not a code object, a processor the table lacks, a short header.
        assert_eq!(code_object_target_id(b"\x7fELF"), None);
        v3[48..52].copy_from_slice(&0x0ffu32.to_le_bytes());
        assert_eq!(code_object_target_id(&v3), None);
        v3[18] = 62;
        assert_eq!(code_object_target_id(&v3), None);
    }

    #[test]
    fn every_name_is_one_row_and_every_generic_named_has_a_row() {
        let mut names: Vec<&str> = PROCESSORS
            .iter()
            .flat_map(|p| std::iter::once(p.name).chain(p.aliases.iter().copied()))
            .collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a name appears twice");
        for p in PROCESSORS {
            for generic in p.covering_generics() {
                let row = Processor::named(generic).unwrap();
                assert_eq!(row.kind(), ProcessorKind::Generic, "{generic}");
                assert!(row.since <= p.since.max(row.since));
            }
            assert!(p.since <= p.until, "{}", p.name);
        }
        let machs: Vec<u16> = PROCESSORS.iter().filter_map(|p| p.mach).collect();
        let mut unique = machs.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), machs.len(), "a mach value appears twice");
    }

    #[test]
    fn each_release_knows_its_own_processors() {
        let v19 = |n: &str| Processor::named_in(LlvmVersion::V19, n).is_some();
        let v22 = |n: &str| Processor::named_in(LlvmVersion::V22, n).is_some();
        assert!(v19("gfx940") && !v22("gfx940"));
        assert!(v19("gfx941") && !v22("gfx941"));
        assert!(!v19("gfx950") && v22("gfx950"));
        assert!(!v19("gfx9-4-generic") && v22("gfx9-4-generic"));
        assert!(!v19("gfx1250") && v22("gfx1250"));
        assert!(!v22("gfx1310") && !v22("gfx12-5-generic"));
        assert!(v19("fiji") && v22("fiji"));
        assert!(!v19(SPIRV) && !v22(SPIRV));
        assert_eq!(Processor::named("polaris10").unwrap().name, "gfx803");
        assert_eq!(
            PROCESSORS
                .iter()
                .filter(|p| p.known_by(LlvmVersion::V19))
                .count(),
            50,
            "LLVM 19's table: 45 processors and 5 generic targets"
        );
        assert_eq!(
            PROCESSORS.iter().filter(|p| p.known_by(LlvmVersion::V22)).count(),
            50 - 2 + 5,
            "LLVM 22's: gfx940 and gfx941 gone; gfx950, gfx1153, gfx1250, gfx1251, gfx9-4-generic new"
        );
    }

    #[test]
    fn generic_coverage_differs_between_llvm_and_the_hip_runtime() {
        let covered = |g: &str| -> Vec<&str> { Processor::covered_by(g).map(|p| p.name).collect() };
        assert_eq!(
            covered("gfx9-4-generic"),
            ["gfx940", "gfx941", "gfx942", "gfx950"]
        );
        let gfx940 = Processor::named("gfx940").unwrap();
        assert_eq!(gfx940.generic_llvm, Some("gfx9-4-generic"));
        assert_eq!(gfx940.generic_hip, None);
        assert_eq!(covered("gfx11-generic").len(), 9);
        assert!(covered("gfx9-generic")
            .iter()
            .all(|p| *p != "gfx908" && *p != "gfx90a"));
        assert_eq!(
            ProcessorKind::of_name("gfx1399-generic"),
            ProcessorKind::Generic
        );
        assert_eq!(ProcessorKind::of_name(SPIRV), ProcessorKind::Spirv);
        assert_eq!(ProcessorKind::of_name("gfx1399"), ProcessorKind::Native);
        assert_eq!(processor_class("gfx1399:xnack+"), Some("unknown"));
        assert_eq!(processor_class("gfx940:sramecc+"), Some("native"));
        assert_eq!(processor_class("gfx12-5-generic"), Some("generic"));
        assert_eq!(processor_class(SPIRV), Some("spirv"));
        assert_eq!(processor_class("sm_80"), None);
        assert_eq!(processor_class(""), None);
    }
}
